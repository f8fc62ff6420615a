"""The next notebook's student kernel, started while a grading worker grades the current one.

Starting a sandboxed kernel (bubblewrap, Python, ipykernel, the course's start-up lines) takes
about a second and a half here; a worker that starts it only when the notebook begins spends that
second and a half of every notebook waiting. Inside a worker, once the current notebook's student
kernel is up, GuardedExecute starts the kernel of the worker's next notebook (the one `next_up`
names) with that submission's files, its own runtime, evidence file and channel folder, exactly as
it would have started it itself, and holds it here; the next notebook takes it instead of starting
one. Kernels are never reused: each is started for one submission and stopped with its notebook.

A held kernel is taken only by the notebook it was started for, with the same settings and an
unchanged submission (its digest); anything else stops it and the notebook starts its own, as
outside a worker (a plain `nbgrader autograde` never holds one).
"""
from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from jupyter_client.utils import run_sync

from . import cgroups


@dataclass
class ReadyKernel:
    key: str          # the submission folder and the launch settings it was started with
    digest: str | None  # the submission's digest when it was started
    base: Path        # the notebook's folder: student/ (the kernel's runtime), evidence.log
    channel: Path     # its channel folder
    km: object        # its kernel manager, started

    def alive(self) -> bool:
        try:
            return bool(run_sync(self.km.is_alive)())
        except Exception:  # its process is gone
            return False

    def stop(self) -> None:
        with contextlib.suppress(Exception):  # already gone
            run_sync(self.km.shutdown_kernel)(now=True)
        cgroups.cleanup(self.base / "student")  # kernel_pair.student_runtime(base)
        shutil.rmtree(self.base, ignore_errors=True)
        shutil.rmtree(self.channel, ignore_errors=True)


_held: ReadyKernel | None = None
# Set by the worker: the next notebook's submission folder and its lesson's source notebook, or None.
next_up: Callable[[], tuple[Path, Path] | None] | None = None


def hold(ready: ReadyKernel) -> None:
    global _held
    discard()
    _held = ready


def holding(key: str) -> bool:
    return _held is not None and _held.key == key


def take(key: str, digest: str | None) -> ReadyKernel | None:
    """The held kernel if it was started for this submission and these settings, the submission
    unchanged since; otherwise None (and whatever was held is stopped)."""
    global _held
    ready, _held = _held, None
    if ready is not None and ready.key == key and ready.digest == digest:
        return ready
    if ready is not None:
        ready.stop()
    return None


def discard() -> None:
    global _held
    ready, _held = _held, None
    if ready is not None:
        ready.stop()
