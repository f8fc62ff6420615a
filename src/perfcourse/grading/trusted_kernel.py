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
  than a quarter of its CPU seconds (`GuardedExecute.cpu_seconds` ends a kernel that uses them);
- one that is not kept is replaced at once when the worker has its next notebook: the successor
  starts while the worker finishes this notebook and begins the next (`keep`), so no notebook
  waits for a trusted kernel to start; with no next notebook in hand (the class's last ones) none
  is started, since it would be stopped unused: a CPU-second lost on cores the other workers need
  (`replace_ahead`; a notebook that arrives later starts its own).

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

from . import cgroups

PREFIX = "perfcourse-trusted-"     # a trusted kernel's folder in TMPDIR: this and 8 characters (tempfile.mkdtemp)
CHANNELS = "perfcourse-channels-"  # the folder of the notebooks' channel folders: likewise
SOCKET = "student.sock"            # in a notebook's channel folder, <channels>/<8 characters>
MAX_SOCKET_BYTES = 107             # a Unix socket's address (sun_path), without its final NUL


def longest_socket(tempdir: str | None = None) -> str:
    """The longest path a notebook's channel socket can have, under `tempdir` (by default this
    process's TMPDIR)."""
    return os.path.join(tempdir or tempfile.gettempdir(), CHANNELS + "x" * 8, "x" * 8, SOCKET)


def new_channels() -> Path:
    """A folder for notebooks' channel folders: bound whole into a trusted kernel's sandbox."""
    folder = Path(tempfile.mkdtemp(prefix=CHANNELS))
    folder.chmod(0o755)  # both kernels' user reaches the sockets below it
    return folder


def channel_folder(channels: Path) -> Path:
    """A fresh folder in `channels` for one notebook's channel socket (only it is bound into that
    notebook's student kernel)."""
    folder = Path(tempfile.mkdtemp(dir=channels, prefix=""))
    folder.chmod(0o755)
    return folder


@dataclass
class TrustedKernel:
    """A trusted kernel and its folders: runtime/ (its sockets) and the channels folder, where each
    notebook's student kernel listens in a folder of its own. Inside `kept()` every trusted kernel
    of the worker shares the worker's channels folder, so a student's kernel started for the next
    notebook (grading/ready_kernel.py) finds its channel whichever trusted kernel grades it."""
    base: Path
    settings: str           # what it was started with: a kernel is reused only with the same
    channels: Path
    owns_channels: bool = False  # made for this kernel alone (outside kept()): removed with it
    km: object = None       # its AsyncKernelManager, once started
    notebooks: int = 0      # notebooks it has begun
    cpu_seconds: float = 0.0  # CPU time it had used when its last notebook began, then ended

    @classmethod
    def new(cls, settings: str) -> "TrustedKernel":
        base = Path(tempfile.mkdtemp(prefix=PREFIX))
        (base / "runtime").mkdir()
        if _channels is not None:
            return cls(base, settings, _channels)
        return cls(base, settings, new_channels(), owns_channels=True)

    @property
    def runtime(self) -> Path:
        return self.base / "runtime"

    def begin(self) -> None:
        """It grades one more notebook."""
        self.notebooks += 1

    def alive(self) -> bool:
        try:
            return self.km is not None and bool(run_sync(self.km.is_alive)())
        except Exception:  # its process is gone
            return False

    def stop(self) -> None:
        if self.km is not None:
            with contextlib.suppress(Exception):  # already gone
                run_sync(self.km.shutdown_kernel)(now=True)
        cgroups.cleanup(self.runtime)
        shutil.rmtree(self.base, ignore_errors=True)
        if self.owns_channels:
            shutil.rmtree(self.channels, ignore_errors=True)


_keeping = False
_kept: TrustedKernel | None = None
_channels: Path | None = None  # the worker's channels folder, inside kept()


@contextlib.contextmanager
def kept():
    """Within this block, a trusted kernel that graded a notebook cleanly grades the next one too,
    and every notebook's channel lies in one folder; whatever is kept is stopped, and the folder
    removed, when the block ends."""
    global _keeping, _kept, _channels
    _keeping, _channels = True, new_channels()
    try:
        yield
    finally:
        _keeping = False
        held, _kept = _kept, None
        if held is not None:
            held.stop()
        channels, _channels = _channels, None
        shutil.rmtree(channels, ignore_errors=True)


def keeping() -> bool:
    return _keeping


def worker_channels() -> Path | None:
    """The worker's channels folder inside kept(), else None."""
    return _channels


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


def give_back(trusted: TrustedKernel, clean: bool, notebooks: int, cpu_seconds: int) -> bool:
    """After a notebook: keep the kernel for the next one (True), or stop it."""
    if (_keeping and clean and trusted.km is not None and trusted.notebooks < notebooks
            and trusted.cpu_seconds < cpu_seconds / 4):
        keep(trusted)
        return True
    trusted.stop()
    return False


def replace_ahead(next_notebook: bool) -> bool:
    """Whether a trusted kernel that is not kept gets its successor started now: inside kept(),
    when the worker already has its next notebook."""
    return _keeping and next_notebook


def keep(trusted: TrustedKernel) -> None:
    """Hold this kernel for the worker's next notebook (one started ahead of it, or one kept)."""
    global _kept
    if _kept is not None and _kept is not trusted:
        _kept.stop()
    _kept = trusted
