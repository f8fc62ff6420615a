"""The Jupyter kernels the course executes notebooks on.

`jax-cpu` is this virtual environment's Python with JAX held to the CPU backend; autograde
and papermill run on it, so grades and CPU artifacts never depend on what accelerator a
machine happens to have. `jax-tpu` and `jax-gpu` are the same Python held to a TPU or a CUDA
GPU, for recording those backends' artifacts (`perfcourse artifacts --kernel jax-tpu`) on a
machine that has one; JAX then fails loudly instead of quietly falling back to the CPU.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from .course import CourseError, write_atomic

KERNELS = {
    "jax-cpu": {"display_name": "Python (JAX, CPU)", "env": {"JAX_PLATFORMS": "cpu"}},
    "jax-tpu": {"display_name": "Python (JAX, TPU)", "env": {"JAX_PLATFORMS": "tpu"}},
    "jax-gpu": {"display_name": "Python (JAX, GPU)", "env": {"JAX_PLATFORMS": "cuda"}},
}


def kernelspec(name: str, python: str) -> dict:
    spec = KERNELS[name]
    return {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": spec["display_name"],
        "language": "python",
        "env": dict(spec["env"]),
        "metadata": {"debugger": True},
    }


def install(name: str = "jax-cpu", prefix: Path | None = None) -> Path:
    """Write the kernelspec into this environment's share/jupyter/kernels (where Jupyter looks first)."""
    if name not in KERNELS:
        raise CourseError(f"unknown kernel {name!r}: the course defines {', '.join(KERNELS)}")
    prefix = Path(prefix or sys.prefix)
    target = prefix / "share" / "jupyter" / "kernels" / name / "kernel.json"
    write_atomic(target, json.dumps(kernelspec(name, sys.executable), indent=2) + "\n")
    return target


def require(name: str) -> None:
    """Fail with one line when a kernel is not installed, before any work starts."""
    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        known = sorted(KernelSpecManager().find_kernel_specs())
        raise CourseError(
            f"unknown kernel {name!r}: installed kernels are {', '.join(known) or 'none'}"
            + (f" (install it with 'perfcourse kernel {name}')" if name in KERNELS else "")
        ) from None
