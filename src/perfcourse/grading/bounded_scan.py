"""The code scan (code_scan.py) in a process of its own, bounded in memory and time.

The scan reads what a student wrote, so whatever it costs is the student's to choose: a cell can be
made to exhaust the parser's recursion, its memory or its time. Run in the grading worker, such a
cell cost the worker gigabytes and minutes; here it costs one child process, which this module
starts on first use (one per grading process), limits (address space, CPU and wall-clock time per
cell and per notebook) and replaces when it dies or runs past its time. A cell whose reading
stopped is flagged "code could not be scanned"; a notebook whose scan stopped altogether is
flagged as a whole. Nothing reads as clean that was not read.

The child speaks one JSON line each way: [[cell number, source], ...] in, the list of flags out.
`python -m perfcourse.grading.bounded_scan` is that child; `scan(cells)` is the grader's side.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time

from . import code_scan
from .code_scan import UNSCANNED

SCAN_MEMORY_BYTES = 1 << 30   # the child's address space: Python, IPython and a capped notebook's trees fit
CELL_SECONDS = 5.0            # one cell's parse, or its walk
NOTEBOOK_SECONDS = 30.0       # the whole notebook, as the grader waits for it
REPLY_BYTES = 1 << 20         # a reply larger than this is not the scan's


class _Stopped(Exception):
    """The child's per-cell timer ran out."""


_lock = threading.Lock()  # one notebook at a time per child
_child: subprocess.Popen | None = None
_child_owner: int | None = None  # the pid that started it: a forked grader starts its own


def scan(cells: list[tuple[int, str]]) -> list[str]:
    """code_scan's flags for (number, source) pairs, read by the bounded child; on any failure of
    the child, one flag saying the notebook could not be scanned and why."""
    request = (json.dumps([[number, source] for number, source in cells]) + "\n").encode("utf-8", "surrogatepass")
    with _lock:
        try:
            child = _running_child()
            child.stdin.write(request)
            child.stdin.flush()
            return _read_reply(child, time.monotonic() + NOTEBOOK_SECONDS)
        except (OSError, EOFError, ValueError, _Stopped) as exc:  # its process died, hung or said nonsense
            _stop_child()
            return [f"{UNSCANNED} (the whole notebook: {_why(exc)})"]


def _why(exc: BaseException) -> str:
    if isinstance(exc, _Stopped):
        return f"the scan ran past {NOTEBOOK_SECONDS:g} s"
    if isinstance(exc, (BrokenPipeError, EOFError)):
        return "the scan's process ended"
    return f"the scan's process failed ({type(exc).__name__})"


def _running_child() -> subprocess.Popen:
    global _child, _child_owner
    if _child is not None and (_child_owner != os.getpid() or _child.poll() is not None):
        _stop_child()
    if _child is None:
        # -P: the grader's working folder is not put on the child's path; nothing of a student's
        # is on it either. stderr is dropped: the child's only word is its reply.
        _child = subprocess.Popen([sys.executable, "-P", "-m", __name__], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        _child_owner = os.getpid()
    return _child


def _stop_child() -> None:
    global _child, _child_owner
    child, owner, _child, _child_owner = _child, _child_owner, None, None
    if child is None:
        return
    if owner == os.getpid() and child.poll() is None:  # a parent's child is the parent's to stop
        with contextlib.suppress(OSError):
            child.kill()
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            child.wait(timeout=5)
    for stream in (child.stdin, child.stdout):
        with contextlib.suppress(OSError):
            stream.close()


def _read_reply(child: subprocess.Popen, deadline: float) -> list[str]:
    """The child's one reply line, read before `deadline`, as a list of flag strings."""
    fd, reply = child.stdout.fileno(), b""
    while not reply.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise _Stopped()
        piece = os.read(fd, 1 << 16)
        if not piece:
            raise EOFError()
        reply += piece
        if len(reply) > REPLY_BYTES:
            raise ValueError("reply too large")
    flags = json.loads(reply)
    if not isinstance(flags, list) or not all(isinstance(flag, str) for flag in flags):
        raise ValueError("not a list of flags")
    return flags


# --- the child ---------------------------------------------------------------------------------
@contextlib.contextmanager
def _cell_timer():
    """Raise _Stopped in this (single-threaded) process if the block runs past CELL_SECONDS."""
    def expired(signum, frame):
        raise _Stopped()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, CELL_SECONDS)
    try:
        yield
    except _Stopped:
        raise code_scan.Unscannable("time") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _serve() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (SCAN_MEMORY_BYTES, SCAN_MEMORY_BYTES))
    for line in sys.stdin.buffer:
        cells = [(int(number), str(source)) for number, source in json.loads(line)]
        flags = code_scan.scan_cells(cells, _cell_timer)
        sys.stdout.write(json.dumps(flags) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
