"""`perfcourse solved`: a release notebook, solved, run as a student runs it, every failing cell named;
and kernels on a host that refuses TCP (kernels.NO_TCP_ENV), as the course's TPU test machine does."""
import subprocess
import sys

import pytest

from conftest import ROOT

from perfcourse import kernels


def test_without_tcp_the_kernels_use_unix_sockets_and_no_iopub_pipe(monkeypatch):
    from jupyter_client import AsyncKernelManager

    monkeypatch.delenv(kernels.NO_TCP_ENV, raising=False)
    assert kernels.manager_class() is AsyncKernelManager
    monkeypatch.setenv(kernels.NO_TCP_ENV, "1")
    manager = kernels.manager_class()(kernel_name="jax-cpu")
    assert manager.transport == "ipc" and "perfcourse-ipc-" in manager.ip  # not in the lesson's folder
    command = manager.format_kernel_cmd()
    assert "perfcourse.kernel.no_tcp" in command and "ipykernel_launcher" not in command


def test_the_accelerator_kernels_keep_the_cpu_beside_them():
    # Host callbacks (performance-03's instrument, the course's timer) place their operands on a CPU device.
    assert kernels.KERNELS["jax-tpu"]["env"]["JAX_PLATFORMS"] == "tpu,cpu"
    assert kernels.KERNELS["jax-gpu"]["env"]["JAX_PLATFORMS"] == "cuda,cpu"


@pytest.mark.slow
def test_bad_input_is_refused_in_one_line_before_anything_runs():
    for args, said in ((["--lesson", "performance-99"], "unknown lesson 'performance-99'"),
                       (["--kernel", "no-such-kernel"], "unknown kernel 'no-such-kernel'")):
        proc = subprocess.run([sys.executable, "-m", "perfcourse.cli", "solved", *args], cwd=ROOT,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and said in proc.stderr and proc.stdout == "", proc.stderr


@pytest.mark.e2e
def test_a_solved_lesson_passes_over_unix_sockets(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "perfcourse.cli", "solved", "--lesson", "performance-02",
                           "--keep", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          env={**__import__("os").environ, kernels.NO_TCP_ENV: "1"}, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "performance-02: passed" in proc.stdout and "1 of 1 solved release notebooks passed" in proc.stdout
    assert (tmp_path / "performance-02.ipynb").is_file()
