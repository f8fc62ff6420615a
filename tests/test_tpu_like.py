"""Every lesson on a backend shaped like an eight-chip TPU runtime (a TPU v5e-8, as on Kaggle or
Cloud TPU), emulated on the CPU.

A TPU v5e-8 has 8 devices (published; Colab's TPU runtime is a one-chip v5e-1, whose one device
tests/test_gpu_like.py and test_colab.py cover), and at the default precision a TPU multiplies
float32 matrices with bfloat16 operands and float32 sums. The kernel here has both: JAX's CPU backend with
XLA_FLAGS=--xla_force_host_platform_device_count=8, and tests/bf16_operands.py's rounding. Each
lesson's source notebook, solutions, public and hidden checks, runs on it once, as `perfcourse
artifacts` runs it, in a scratch course (the `tpu_like_run` fixture in conftest.py, which
tests/test_performance_02_devices.py reads too).
"""
import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT, TPU_LIKE_KERNEL

from perfcourse.course import lessons

pytestmark = [pytest.mark.e2e,  # kernels, graded classes or executed notebooks (make test, not make check)
              pytest.mark.xdist_group("tpu-like")]  # one pytest-xdist worker runs each lesson once


def test_the_kernel_has_eight_devices_and_bfloat16_operands(tpu_like_jupyter, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(tpu_like_jupyter))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import jax\nfrom perfcourse.checks import numerics\nprint(jax.device_count(), numerics.matmul_precision())")])
    NotebookClient(nb, kernel_name=TPU_LIKE_KERNEL, timeout=120).execute()
    assert nb.cells[0].outputs[0]["text"].strip() == "8 bfloat16 passes"


# In make test, the lessons whose verdicts eight devices and bfloat16 operands change most: the
# device count (performance-02's compiles per device change, which tests/test_performance_02_devices.py
# reads), gradients at bfloat16 precision (05) and the sharded step (08); every lesson nightly, to
# keep make test under 10 minutes on 2 cores.
IN_MAKE_TEST = ("performance-02", "performance-05", "performance-08")


@pytest.mark.parametrize("lesson", [pytest.param(lesson, marks=() if lesson in IN_MAKE_TEST else pytest.mark.nightly)
                                    for lesson in lessons(ROOT)])
def test_lesson_passes_on_a_tpu_like_backend(lesson, tpu_like_run):
    error, artifact = tpu_like_run(lesson)
    assert error is None, error
    assert artifact["environment"]["backend"] == "cpu" and artifact["environment"]["deviceCount"] == 8
    assert artifact["provenance"] == "recorded_cpu_computation"
