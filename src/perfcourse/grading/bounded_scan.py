"""The code scan (code_scan.py) in a process of its own, bounded in memory and time.

The scan reads what a student wrote, so whatever it costs is the student's to choose: a cell can be
made to exhaust the parser's recursion, its memory or its time. Run in the grading worker, such a
cell cost the worker gigabytes and minutes; here it costs one child process, which this module
starts on first use (one per grading process), limits (address space, CPU and wall-clock time per
cell and per notebook) and replaces when it dies or runs past its time. A cell whose reading
stopped is flagged "code could not be scanned"; a notebook whose scan stopped altogether is
flagged as a whole. Nothing reads as clean that was not read.

The child speaks one JSON line each way: [[cell number, source], ...] in, the list of flags out.
`Child` is such a bounded child process, one per grading process (bounded_read.py has one too).
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


class Child:
    """A child process of `module`, one per grading process: started on first use (a forked grader
    starts its own), stopped when it dies, hangs or says nonsense, and started again on next use.
    It speaks one line each way."""

    def __init__(self, module: str, reply_bytes: int):
        self.module, self.reply_bytes = module, reply_bytes
        self.lock = threading.Lock()  # one request at a time
        self.process: subprocess.Popen | None = None
        self.owner: int | None = None

    def ask(self, request: bytes, seconds: float, child: subprocess.Popen | None = None) -> bytes:
        """Send one line, return the reply line; _Stopped past `seconds`, OSError, EOFError or
        ValueError when the child fails (the caller stops it)."""
        child = child or self.running()
        child.stdin.write(request)
        child.stdin.flush()
        fd, reply, deadline = child.stdout.fileno(), b"", time.monotonic() + seconds
        while not reply.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise _Stopped()
            piece = os.read(fd, 1 << 16)
            if not piece:
                raise EOFError()
            reply += piece
            if len(reply) > self.reply_bytes:
                raise ValueError("reply too large")
        return reply

    def running(self) -> subprocess.Popen:
        if self.process is not None and (self.owner != os.getpid() or self.process.poll() is not None):
            self.stop()
        if self.process is None:
            # -P: the grader's working folder is not put on the child's path; nothing of a student's
            # is on it either. stderr is dropped: the child's only word is its reply.
            self.process = subprocess.Popen([sys.executable, "-P", "-m", self.module], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
            self.owner = os.getpid()
        return self.process

    def stop(self) -> None:
        child, owner, self.process, self.owner = self.process, self.owner, None, None
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


_scanner = Child(__name__, REPLY_BYTES)


def __getattr__(name: str):
    if name == "_child":  # the scanner's process, or None
        return _scanner.process
    raise AttributeError(name)


def _running_child() -> subprocess.Popen:
    return _scanner.running()


def scan(cells: list[tuple[int, str]]) -> list[str]:
    """code_scan's flags for (number, source) pairs, read by the bounded child; on any failure of
    the child, one flag saying the notebook could not be scanned and why."""
    request = (json.dumps([[number, source] for number, source in cells]) + "\n").encode("utf-8", "surrogatepass")
    with _scanner.lock:
        try:
            flags = json.loads(_scanner.ask(request, NOTEBOOK_SECONDS, _running_child()))
            if not isinstance(flags, list) or not all(isinstance(flag, str) for flag in flags):
                raise ValueError("not a list of flags")
            return flags
        except (OSError, EOFError, ValueError, _Stopped) as exc:  # its process died, hung or said nonsense
            _scanner.stop()
            return [f"{UNSCANNED} (the whole notebook: {_why(exc)})"]


def _why(exc: BaseException) -> str:
    if isinstance(exc, _Stopped):
        return f"the scan ran past {NOTEBOOK_SECONDS:g} s"
    if isinstance(exc, (BrokenPipeError, EOFError)):
        return "the scan's process ended"
    return f"the scan's process failed ({type(exc).__name__})"


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
