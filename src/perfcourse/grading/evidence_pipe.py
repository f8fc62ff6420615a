"""The student kernel's evidence pipe, read from outside the sandbox by its launcher.

The launcher (grading/sandbox.py) hands the kernel the write end of a pipe (PERFCOURSE_EVIDENCE_FD,
perfcourse.kernel.evidence) and stays alive to copy what arrives into a file outside the sandbox,
at most EVIDENCE_CAP bytes (then TRUNCATED). It also says there when the kernel closed the pipe
while it still ran (CLOSED), and when a process of the sandbox holds the pipe's write end under a
second descriptor (SECOND). `kernel` is the launcher's ExecKernel or ForkedKernel: what is read of it
is `roots()`, `wait(seconds)` and `exit_code(status)`.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ..kernel.evidence import CLOSED, SECOND, TRUNCATED

EVIDENCE_CAP = 1 << 20
CLOSE_GRACE = 2.0                     # seconds a sandbox has to exit once its kernel's evidence pipe closed
HOLDERS_EVERY = 0.2                   # seconds between looks at which descriptors hold the evidence pipe


def copy(source: int, target: int, kernel, number: int, cgroups=()) -> int:
    """Copy the kernel's evidence lines into the file until every writer is gone; the child's status.

    Only the kernel holds the pipe's write end (this launcher closes its own, and bubblewrap's
    processes close what they pass on), so the end of file comes when the kernel ends, or when
    its code closes or replaces that descriptor (os.close, os.dup2 of /dev/null over it). A
    kernel that ends takes its sandbox with it at once; one whose sandbox still runs CLOSE_GRACE
    seconds later closed the channel while it ran, and the file says so (CLOSED).

    Meanwhile, every HOLDERS_EVERY seconds, the launcher reads from outside which descriptors of
    the sandbox's processes hold the pipe (`second_holders`): the write end under any number but
    `number`, the one handed over (before the kernel's first line, in two looks in a row), means the
    kernel duplicated it (os.dup), to put a pipe of its own in its place and write what it likes to
    the real one; the file says so once (SECOND). A duplicate kept for less than HOLDERS_EVERY can
    pass unseen."""
    import select

    written, cut, second, looked, before, arrived = 0, False, False, 0.0, set(), False
    pipe = f"pipe:[{os.fstat(source).st_ino}]"
    while True:
        # Every HOLDERS_EVERY seconds, and as each line arrives (a heartbeat: a cell starts), so a
        # duplicate kept from one cell into the next is seen whatever the cells' lengths.
        since = time.monotonic() - looked
        if not second and (since >= HOLDERS_EVERY or (arrived and since >= HOLDERS_EVERY / 10)):
            # Before the kernel's first line, seen twice in a row: a kernel being started holds the
            # pipe under another number for a moment (a forked one receives it so), until it puts it
            # in its place; once its hook writes, it is in place, and one look is enough.
            looked, now = time.monotonic(), set(second_holders(pipe, number, kernel.roots(), cgroups))
            if now & before or (now and written):
                os.write(target, b"\n" + SECOND.encode() + b"\n")
                second = True
            before = now
        try:
            arrived = bool(select.select([source], [], [], HOLDERS_EVERY)[0])
            if not arrived:
                continue
            chunk = os.read(source, 1 << 16)
        except InterruptedError:
            continue
        if not chunk:
            break
        if written + len(chunk) <= EVIDENCE_CAP:
            os.write(target, chunk)
            written += len(chunk)
        elif not cut:  # keep draining, so the kernel never blocks on a full pipe
            os.write(target, b"\n" + TRUNCATED.encode() + b"\n")
            cut = True
    status = kernel.wait(CLOSE_GRACE)
    if status is None:
        os.write(target, b"\n" + CLOSED.encode() + b"\n")
    os.close(target)
    if status is None:
        status = kernel.wait(None)
    return kernel.exit_code(status)


def second_holders(pipe: str, number: int, roots, cgroups=()) -> list[tuple[int, int]]:
    """(pid, descriptor) of each process of the sandbox (its cgroups' members and the descendants of
    `roots`) that holds `pipe` ('pipe:[INODE]') open for writing under a number other than `number`
    (a child forked by the kernel keeps its number; a read end is the launcher's, or its child's
    before it execs). Read from outside (/proc/PID/fd): nothing in the sandbox can change it."""
    me, pids, seen = os.getpid(), [], set()
    for directory in cgroups:
        with contextlib.suppress(OSError, ValueError):
            pids += [int(p) for p in (Path(directory) / "cgroup.procs").read_text().split()]
    pending = [r for r in roots if r]
    while pending:  # descendants, through every thread's children
        pid = pending.pop()
        if pid in seen:
            continue
        seen.add(pid)
        pids.append(pid)
        with contextlib.suppress(OSError, ValueError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as file:
                    pending += [int(c) for c in file.read().split()]
    found = []
    for pid in dict.fromkeys(pids):
        if pid == me:
            continue
        with contextlib.suppress(OSError):
            for name in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError, ValueError):
                    if name != str(number) and os.readlink(f"/proc/{pid}/fd/{name}") == pipe and _writes(pid, name):
                        found.append((pid, int(name)))
    return found


def _writes(pid: int, name: str) -> bool:
    """Whether descriptor `name` of `pid` is open for writing (a pipe's write end, not its read end)."""
    with open(f"/proc/{pid}/fdinfo/{name}") as file:
        for line in file:
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & os.O_ACCMODE != os.O_RDONLY
    return False
