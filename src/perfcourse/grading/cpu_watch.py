"""How much CPU a process tree got, and how long it waited for one: a stall told from a starved run.

The grader runs a student's code in a process of its own under a time limit (grading/recount.py).
Wall time alone cannot say whose fault an unfinished run is: a cell that sleeps and a correct cell
on a worker so loaded that it hardly ran look the same. Linux tells them apart per thread: CPU time
(utime and stime in /proc/PID/stat) is what the tree ran; run delay (the second field of
/proc/PID/task/TID/schedstat) is how long a thread was runnable and queued for a CPU, which is what
other processes' load (or a cgroup's CPU quota) costs it. A sleeping or stopped thread waits for
nothing there (nor does one blocked on a disk). One thread can wait only while another runs on its
CPU, so what the tree's own threads make it wait is at most the tree's own CPU time: a run held
under a CPU limit cannot fake a wait longer than that limit, however it arranges its threads or
their priorities.

`watch` samples the tree (the roots it is given and their descendants; processes a cgroup holds
are roots too, a kernel forked from a warm process being no launcher's descendant) a few times a
second until the process ends, the tree has used its CPU limit, or the wall ceiling has passed.
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

INTERVAL = 0.2  # seconds between samples: a spinner is stopped this late past its CPU limit at most
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Usage:
    """What the tree has had so far. `cpu`: CPU seconds of every process seen (with the children
    each has reaped: a child too short-lived to be seen still counts). `waited`: the longest any
    one thread of it was runnable without a CPU, seconds; None where Linux does not say (no
    schedstat)."""
    cpu: float = 0.0
    waited: float | None = None


@dataclass
class Ending:
    """How the watch ended: `status`, the process's return code where it ended by itself (None:
    it was still running at `reason`, "cpu" or "wall"), the tree's usage then, and the wall time."""
    status: int | None
    reason: str | None
    usage: Usage
    wall: float


class TreeUsage:
    """The CPU and run delay of a process tree, accumulated over samples: each process's and
    thread's latest reading is kept, so one that has ended still counts."""

    def __init__(self, roots: Callable[[], list[int]]):
        self.roots = roots
        self.cpu: dict[tuple[int, str], float] = {}      # (pid, start time) -> its CPU seconds
        self.waits: dict[tuple[int, int, str], float] = {}  # (pid, tid, start) -> its run delay
        self.readable = False

    def sample(self) -> Usage:
        for pid in tree(self.roots()):
            stat = _stat(pid)
            if stat is None:
                continue
            start = stat[19]  # the process's start time: a reused pid is another process
            self.cpu[(pid, start)] = sum(int(field) for field in stat[11:15]) / _TICKS  # utime stime cutime cstime
            for tid in threads(pid):
                delay = _run_delay(pid, tid)
                if delay is not None:
                    self.readable = True
                    key = (pid, tid, start)
                    self.waits[key] = max(self.waits.get(key, 0.0), delay)
        return Usage(sum(self.cpu.values()), max(self.waits.values(), default=0.0) if self.readable else None)



def tree(roots: list[int]) -> list[int]:
    """The processes `roots` and every descendant of theirs that lives now."""
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for tid in threads(pid):
            try:
                todo.extend(int(child) for child in Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
            except (OSError, ValueError):
                pass
    return sorted(seen)


def threads(pid: int) -> list[int]:
    """The thread ids of a process ([] once it has gone)."""
    return _listing(f"/proc/{pid}/task")


def _listing(folder: str) -> list[int]:
    try:
        return [int(name) for name in os.listdir(folder) if name.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command's name (the state first); None once it has gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields if len(fields) > 19 else None


def _run_delay(pid: int, tid: int) -> float | None:
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def watch(process: subprocess.Popen, roots: Callable[[], list[int]], cpu_limit: float, ceiling: float,
          interval: float = INTERVAL) -> Ending:
    """Wait for `process` until it ends, its tree (`roots()` and their descendants) has used
    `cpu_limit` CPU seconds, or `ceiling` seconds of wall time have passed; it is left running."""
    watched, began = TreeUsage(roots), time.monotonic()
    while True:
        usage = watched.sample()
        wall = time.monotonic() - began
        status = process.poll()
        if status is not None:
            return Ending(status, None, usage, wall)
        if usage.cpu >= cpu_limit or wall >= ceiling:
            return Ending(None, "cpu" if usage.cpu >= cpu_limit else "wall", usage, wall)
        try:
            return Ending(process.wait(min(interval, max(ceiling - wall, 0.01))), None, watched.sample(),
                          time.monotonic() - began)
        except subprocess.TimeoutExpired:
            continue
