"""A grading worker's fork server: the warm process its kernels are forked from.

Starting a sandboxed kernel by exec costs about a CPU-second here (Python importing IPython,
ipykernel and JAX), and a worker starts two per notebook: a third of grading's CPU. Inside
`kept()` (a grading worker's life) the worker keeps, for each role of kernel (the students', the
trusted one), a process (perfcourse.kernel.forkserver) that has imported them (WARM_MODULES) with
exactly the environment and interpreter flags its kernels are started with; the sandbox's
launcher forks each kernel from it into a fresh bubblewrap sandbox (grading/sandbox.py,
`ForkedKernel`) instead of exec'ing Python there, at about 0.13 CPU-seconds. The kernels are as
isolated as exec'd ones (the same namespaces, cgroup, rlimits, user, no capabilities,
no_new_privs, only their own descriptors) and never shared: each is a copy of the warm process as
it was after its imports, which never runs a student's code nor reads a request. A server holds
about 160 MB (70 MB of it its own, the rest files its kernels share with it).

`for_kernel` gives the launcher the server's socket for a kernel started with this argv and
environment, starting a server (and stopping one for other settings) as needed; a launcher
that finds no server ready, or a server that refuses, starts its kernel by exec as before.
Outside `kept()` (a plain `nbgrader autograde`) there is none: a server costs what a kernel
start costs, and only a worker grading several notebooks earns it back.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from ..kernel.forkserver import PER_KERNEL

# Imported by the warm process: what a kernel's start imports (ipykernel, the course's start-up
# lines in the student's kernel, JAX without its backend). Nothing that starts a thread of
# Python's or reads a per-kernel setting at import time.
WARM_MODULES = ("ipykernel.kernelapp", "ipykernel.ipkernel", "IPython", "numpy", "jax", "jax.numpy",
                "perfcourse.kernel.evidence", "perfcourse.kernel.agent", "perfcourse.kernel.output_cap")
SOCKET = "fork.sock"
PID_FILE = "server.pid"  # the launcher waits for the socket while this process lives
LOG = "server.log"


class ForkServer:
    """One warm process, started now; its socket appears once it has imported its modules."""

    def __init__(self, key: tuple, kernel_argv: list[str], env: dict[str, str], modules: tuple | None = None):
        self.key = key
        modules = WARM_MODULES if modules is None else modules
        self.folder = Path(tempfile.mkdtemp(prefix="perfcourse-fork-"))  # 0700: only the grader connects
        python, flags = kernel_argv[0], kernel_argv[1:kernel_argv.index("-m")]
        with open(self.folder / LOG, "wb") as log:
            self.process = subprocess.Popen(
                [python, *flags, "-m", "perfcourse.kernel.forkserver", str(self.socket), str(os.getpid()), *modules],
                env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        (self.folder / PID_FILE).write_text(str(self.process.pid))

    @property
    def socket(self) -> Path:
        return self.folder / SOCKET

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_keeping = False
_servers: dict[str, ForkServer] = {}  # by role


@contextlib.contextmanager
def kept():
    """Within this block kernels are forked from warm processes (each started at its first
    kernel); they are stopped when the block ends."""
    global _keeping
    _keeping = True
    try:
        yield
    finally:
        _keeping = False
        while _servers:
            _servers.popitem()[1].stop()


def for_kernel(role: str, kernel_argv: list[str], env: dict[str, str]) -> str | None:
    """The socket of the fork server for `role`'s kernels started with `kernel_argv` (Python,
    its flags, `-m` and the module) and the kernel environment `env` (the launcher's, less
    PER_KERNEL); None outside kept().

    Students' and trusted kernels never share a server: every process forked from one shares its
    address layout, stack canary and string hash key, and a student's kernel must learn nothing
    of the trusted kernel's that way."""
    if not _keeping or "-m" not in kernel_argv:
        return None
    env = {k: v for k, v in env.items() if k not in PER_KERNEL}
    key = (tuple(kernel_argv[:kernel_argv.index("-m")]), tuple(sorted(env.items())))
    server = _servers.get(role)
    if server is not None and (server.key != key or not server.alive()):
        server.stop()
        server = None
    if server is None:
        server = _servers[role] = ForkServer(key, kernel_argv, env)
    return str(server.socket)
