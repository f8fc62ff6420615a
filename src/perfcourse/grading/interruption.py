"""A grading worker's SIGTERM: the notebook under way ends at once, through its own teardown, and
the worker after it.

The pool stops its workers with SIGTERM when `perfcourse grade` is interrupted (grading/run.py).
An exception raised from the signal handler would land anywhere: nbgrader runs a notebook inside
a bare `except:` (nbgrader.utils.capture_log), which swallows it and grades on, and one raised in
the middle of SQLAlchemy's mapper set-up or of a kernel's start left kernels and folders behind.
So the handler raises nothing: it records the request and kills the kernels of the notebook
under way (`stopping`), whose cell then fails as a dead kernel's does; a notebook that reaches
its next cell instead stops there (GuardedExecute), its teardown stops its kernels and removes its
folders as after any failure, and the worker takes no further notebook (worker.py) and leaves
through its own `finally` blocks.
"""
from __future__ import annotations

import contextlib
import signal
from typing import Callable

_requested = False
_stoppers: list[Callable[[], None]] = []  # what ends the work under way: its kernels, killed


def leave(signum, frame) -> None:
    """The worker's SIGTERM handler."""
    global _requested
    _requested = True
    for stop in list(_stoppers):
        with contextlib.suppress(Exception):  # a kernel already gone
            stop()


def install() -> None:
    signal.signal(signal.SIGTERM, leave)


def requested() -> bool:
    """The worker was asked to stop (always False outside a worker)."""
    return _requested


class Interrupted(RuntimeError):
    """Raised at a safe point (before a notebook's next cell) once the worker was asked to stop."""

    def __init__(self):
        super().__init__("grading was interrupted")


@contextlib.contextmanager
def stopping(stop: Callable[[], None]):
    """Within this block a SIGTERM calls `stop` (it must only kill, never wait or raise); if the
    stop was asked for before the block, it is called at once."""
    _stoppers.append(stop)
    try:
        if _requested:
            leave(signal.SIGTERM, None)
        yield
    finally:
        _stoppers.remove(stop)
