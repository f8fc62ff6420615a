"""The Jupyter kernels the course executes notebooks on.

`jax-cpu` is this virtual environment's Python with JAX held to the CPU backend; autograde
and papermill run on it, so grades and CPU artifacts never depend on what accelerator a
machine happens to have. `jax-tpu` and `jax-gpu` are the same Python held to a TPU or a CUDA
GPU, for recording those backends' artifacts (`perfcourse artifacts --kernel jax-tpu`) on a
machine that has one; JAX then fails loudly instead of quietly falling back to the CPU.
"""
from __future__ import annotations

import sys
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from .course import CourseError

KERNELS = {
    "jax-cpu": {"display_name": "Python (JAX, CPU)", "env": {"JAX_PLATFORMS": "cpu"}},
    "jax-tpu": {"display_name": "Python (JAX, TPU)", "env": {"JAX_PLATFORMS": "tpu"}},
    "jax-gpu": {"display_name": "Python (JAX, GPU)", "env": {"JAX_PLATFORMS": "cuda"}},
}


DEFAULT = "jax-cpu"  # the kernel artifacts are recorded on by default; grading's is Execute.kernel_name


def install(name: str = DEFAULT, prefix: Path | None = None) -> Path:
    """ipykernel's own install (`ipykernel install --env ...`) into this environment's share/jupyter/kernels."""
    from ipykernel.kernelspec import install as ipykernel_install

    if name not in KERNELS:
        raise CourseError(f"unknown kernel {name!r}: the course defines {', '.join(KERNELS)}")
    spec = KERNELS[name]
    folder = ipykernel_install(kernel_name=name, display_name=spec["display_name"],
                               prefix=str(prefix or sys.prefix), env=dict(spec["env"]))
    return Path(folder) / "kernel.json"


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
