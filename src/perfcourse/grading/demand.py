"""How many grading workers a class can use: the pool follows the machine's idle CPU, not its core count.

Much of a notebook's grading time is waiting, not computing: the timing checks hold each call for
a time they draw (wall time, no CPU; checks/timing.py), kernels wait on each other across the
channel, a kernel starts. One worker per core leaves cores idle then, so `perfcourse grade` starts
START_PER_CORE workers per core and adds one whenever the cores it may use were more than
GROW_IDLE idle over the last WINDOW seconds while work was waiting for a worker, up to a ceiling
set by the memory a worker's two kernels may take and by CEILING_PER_CORE. Under load from other
processes the cores are not idle and the pool does not grow. `--workers N` fixes the pool at N.
"""
from __future__ import annotations

import os
from pathlib import Path

GROW_IDLE = 0.20        # share of the pool's cores idle over a window before one more worker starts
WINDOW = 3.0            # seconds of CPU accounting each decision reads
START_PER_CORE = 2      # workers per core at the start (memory permitting): on 2 cores, a class of 33
                        # notebooks took 34.7-34.9 s on 4 workers, 35.6-35.7 on 3 and 35.3-36.1 on 5-6;
                        # starting at one per core and growing, 36.0-38.2 (docs/instructors/grading.md)
CEILING_PER_CORE = 3    # never more workers than this per core, whatever memory allows
TRUSTED_KERNEL_BYTES = 1 << 30  # what a worker's own process, trusted kernel and two fork servers may hold besides
                                # the student's kernel (measured: about 110, 190 and 2 x 75 MiB resident)
STAT = Path("/proc/stat")
MEMINFO = Path("/proc/meminfo")


def cores() -> list[int]:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def cpu_times(cpus: list[int], stat: Path = STAT) -> tuple[int, int] | None:
    """(idle, total) jiffies summed over `cpus` from /proc/stat, None where it cannot be read."""
    wanted = {f"cpu{n}" for n in cpus}
    idle = total = 0
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, *fields = line.split()
        if name in wanted:
            numbers = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
            idle += numbers[3] + numbers[4]
            total += sum(numbers)
    return (idle, total) if total else None


def available_memory(meminfo: Path = MEMINFO) -> int | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def ceiling(core_count: int, student_kernel_bytes: int, memory: int | None,
            per_core: int = CEILING_PER_CORE) -> int:
    """The most workers the pool may have: `per_core` per core, and no more than the available
    memory holds if every student's kernel used its whole memory bound; never fewer than one per
    core."""
    most = per_core * core_count
    if memory is not None:
        most = min(most, memory // (student_kernel_bytes + TRUSTED_KERNEL_BYTES))
    return max(core_count, most)


class PoolSize:
    """Decides, one window at a time, whether the pool should grow by a worker.

    `fixed` (from --workers) keeps it at that size. Otherwise it starts at START_PER_CORE workers
    per core (as memory allows) and grows while the cores stay idle and work is waiting, up to
    `most`."""

    def __init__(self, fixed: int | None, student_kernel_bytes: int, stat: Path = STAT,
                 meminfo: Path = MEMINFO):
        self.cpus = cores()
        self.fixed = fixed
        self.stat = stat
        memory = available_memory(meminfo)
        self.initial = fixed or ceiling(len(self.cpus), student_kernel_bytes, memory, START_PER_CORE)
        self.most = fixed or ceiling(len(self.cpus), student_kernel_bytes, memory)
        self.last = cpu_times(self.cpus, stat)

    def idle_share(self) -> float | None:
        """The share of the pool's cores idle since the last call."""
        now = cpu_times(self.cpus, self.stat)
        last, self.last = self.last, now
        if now is None or last is None or now[1] <= last[1]:
            return None
        return (now[0] - last[0]) / (now[1] - last[1])

    def grow(self, workers: int, waiting: bool) -> bool:
        """Whether to start one more worker now, given the pool's size and whether a task waits
        for a worker. Reads the CPU accounting either way, so each window starts afresh."""
        idle = self.idle_share()
        if self.fixed or not waiting or workers >= self.most or idle is None:
            return False
        return idle >= GROW_IDLE
