"""The Jupyter kernels the course executes notebooks on.

`jax-cpu` is this virtual environment's Python with JAX held to the CPU backend; autograde
and papermill run on it, so grades and CPU artifacts never depend on what accelerator a
machine happens to have. `jax-tpu` and `jax-gpu` are the same Python on a TPU or a CUDA GPU,
for trying the lessons (`perfcourse solved`) and recording those backends' artifacts
(`perfcourse artifacts --kernel jax-tpu`) on a machine that has one: the accelerator first, so it
is JAX's default backend, and JAX fails loudly where it is missing instead of quietly falling back
to the CPU; the CPU listed second, as on Colab (where JAX_PLATFORMS is unset and both start),
because a compiled program's host callbacks (`jax.debug.callback`, which performance-03's and the
course timer's instruments use) place their operands on a CPU device.
"""
from __future__ import annotations

import sys
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from .course import CourseError

KERNELS = {
    "jax-cpu": {"display_name": "Python (JAX, CPU)", "env": {"JAX_PLATFORMS": "cpu"}},
    "jax-tpu": {"display_name": "Python (JAX, TPU)", "env": {"JAX_PLATFORMS": "tpu,cpu"}},
    "jax-gpu": {"display_name": "Python (JAX, GPU)", "env": {"JAX_PLATFORMS": "cuda,cpu"}},
}


DEFAULT = "jax-cpu"  # the kernel artifacts are recorded on by default; grading's is Execute.kernel_name

# Set (to anything) on a host that lets no process open a TCP socket, loopback included (some
# sandboxed accelerator machines): the kernels the course's commands start then talk over unix
# sockets, and the kernel's IOPub pipe, which ipykernel always binds on tcp://127.0.0.1 (libzmq
# aborts the kernel there), stays off.
NO_TCP_ENV = "PERFCOURSE_NO_TCP"


def install(name: str = DEFAULT, prefix: Path | None = None, user: bool = False) -> Path:
    """ipykernel's own install (`ipykernel install --env ...`) into this environment's share/jupyter/kernels,
    or with `user` into the user's (~/.local/share/jupyter/kernels), where the environment is not writable."""
    from ipykernel.kernelspec import install as ipykernel_install

    if name not in KERNELS:
        raise CourseError(f"unknown kernel {name!r}: the course defines {', '.join(KERNELS)}")
    spec = KERNELS[name]
    where = {"user": True} if user else {"prefix": str(prefix or sys.prefix)}
    folder = ipykernel_install(kernel_name=name, display_name=spec["display_name"], env=dict(spec["env"]), **where)
    return Path(folder) / "kernel.json"


def manager_class():
    """The kernel manager the course's commands execute notebooks with: jupyter_client's own, or
    on a host without TCP (NO_TCP_ENV) one that uses unix sockets and keeps the IOPub pipe off."""
    import os

    from jupyter_client import AsyncKernelManager

    if not os.environ.get(NO_TCP_ENV):
        return AsyncKernelManager
    import tempfile

    class UnixSocketKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.transport = "ipc"
            # ipc "addresses" are path prefixes: keep the sockets out of the lesson's folder
            self.ip = str(Path(tempfile.mkdtemp(prefix="perfcourse-ipc-")) / "kernel")

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            return [("perfcourse.kernel.no_tcp" if part == "ipykernel_launcher" else part) for part in cmd]

    return UnixSocketKernelManager


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
