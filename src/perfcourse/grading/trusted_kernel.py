"""The trusted kernel of one grading worker, kept from one notebook to the next.

Each notebook is graded on two sandboxed kernels (grading/execute.py). The student's kernel runs
student code, so every notebook gets a fresh one. The trusted kernel runs only the instructor's
grade cells and takes only checked values from the student's kernel (checks/remote.py), so
nothing a student does can change it; starting it and importing JAX in it, though, costs about
a CPU-second per notebook, a fifth of grading one. Inside `kept()` (a grading worker's life) it
is kept for the next notebook:

- before each notebook it forgets the last one: its names, its channel to the last student's
  kernel, what the checks measured of the machine (`checks.remote.start_notebook`);
- it is kept only after a notebook in which nothing happened to it: no interrupt (a cell limit,
  a student's kernel that stopped serving), no death, no error of the grader's;
- for at most `GuardedExecute.trusted_kernel_notebooks` notebooks, and while it has used less
  than a quarter of its CPU seconds (`GuardedExecute.cpu_seconds` ends a kernel that uses them).

Outside `kept()` (a plain `nbgrader autograde`, Formgrader) every notebook starts its own, as
before, and nothing is left running once the notebook is graded.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.utils import run_sync

from . import sandbox

PREFIX = "perfcourse-trusted-"  # its folder in TMPDIR: this and 8 characters (tempfile.mkdtemp)
SOCKET = "student.sock"         # in a notebook's channel folder, channels/<its number>
MAX_SOCKET_BYTES = 107          # a Unix socket's address (sun_path), without its final NUL


def longest_socket(notebooks: int) -> str:
    """The longest path a notebook's channel socket can have, under this process's TMPDIR."""
    return os.path.join(tempfile.gettempdir(), PREFIX + "x" * 8, "channels", str(notebooks), SOCKET)


@dataclass
class TrustedKernel:
    """A trusted kernel and its folder: runtime/ (its sockets) and channels/ (one folder per
    notebook, where that notebook's student kernel listens; the whole of channels/ is bound into
    the trusted kernel's sandbox, only its own notebook's folder into a student's)."""
    base: Path
    settings: str           # what it was started with: a kernel is reused only with the same
    km: object = None       # its AsyncKernelManager, once started
    notebooks: int = 0      # notebooks it has begun
    cpu_seconds: float = 0.0  # CPU time it had used when its last notebook began, then ended

    @classmethod
    def new(cls, settings: str) -> "TrustedKernel":
        base = Path(tempfile.mkdtemp(prefix=PREFIX))
        (base / "runtime").mkdir()
        (base / "channels").mkdir()
        return cls(base, settings)

    @property
    def runtime(self) -> Path:
        return self.base / "runtime"

    @property
    def channels(self) -> Path:
        return self.base / "channels"

    def channel_folder(self) -> Path:
        """A fresh folder for the next notebook's channel socket (the last one's is gone)."""
        self.notebooks += 1
        folder = self.channels / str(self.notebooks)
        folder.mkdir()
        return folder

    def alive(self) -> bool:
        try:
            return self.km is not None and bool(run_sync(self.km.is_alive)())
        except Exception:  # its process is gone
            return False

    def stop(self) -> None:
        if self.km is not None:
            with contextlib.suppress(Exception):  # already gone
                run_sync(self.km.shutdown_kernel)(now=True)
        sandbox.cleanup(self.runtime)
        shutil.rmtree(self.base, ignore_errors=True)


_keeping = False
_kept: TrustedKernel | None = None


@contextlib.contextmanager
def kept():
    """Within this block, a trusted kernel that graded a notebook cleanly grades the next one too;
    whatever is kept is stopped when the block ends."""
    global _keeping, _kept
    _keeping = True
    try:
        yield
    finally:
        _keeping = False
        held, _kept = _kept, None
        if held is not None:
            held.stop()


def take(settings: str) -> TrustedKernel:
    """The kept trusted kernel if it was started with these settings and is still running (it
    could have been killed since), else a new (unstarted) one."""
    global _kept
    held, _kept = _kept, None
    if held is not None and held.settings == settings and held.alive():
        return held
    if held is not None:
        held.stop()
    return TrustedKernel.new(settings)


def give_back(trusted: TrustedKernel, clean: bool, notebooks: int, cpu_seconds: int) -> None:
    """After a notebook: keep the kernel for the next one, or stop it."""
    global _kept
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(trusted.channels / str(trusted.notebooks))  # never follows a link
    if (_keeping and clean and trusted.km is not None and trusted.notebooks < notebooks
            and trusted.cpu_seconds < cpu_seconds / 4):
        _kept = trusted
    else:
        trusted.stop()
