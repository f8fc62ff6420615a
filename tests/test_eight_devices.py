"""Lessons work when the backend has 8 devices, as a TPU v2-8 has: simulated on the CPU.

Each source notebook, hidden tests included, is executed by `perfcourse artifacts` on a kernel
whose environment has XLA_FLAGS=--xla_force_host_platform_device_count=8.
"""
import json
import sys

import pytest

from conftest import ROOT, kernelspec_dir, perfcourse

from perfcourse.course import lessons

pytestmark = pytest.mark.e2e  # kernels, graded classes or executed notebooks (make test, not make check)

EIGHT = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}


@pytest.mark.parametrize("lesson", lessons(ROOT))
def test_lesson_runs_on_eight_devices(lesson, course, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(kernelspec_dir(tmp_path / "jupyter", "jax-cpu-8", sys.executable, EIGHT)))
    proc = perfcourse("artifacts", "--lesson", lesson, "--kernel", "jax-cpu-8", cwd=course)
    assert proc.returncode == 0, proc.stderr
    artifact = json.loads((course / "artifacts" / "cpu" / f"{lesson}.json").read_text())
    assert artifact["environment"]["deviceCount"] == 8
    assert artifact["provenance"] == "recorded_cpu_computation"
