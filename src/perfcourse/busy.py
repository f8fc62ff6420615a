"""Another user's work on the machine, for proving that grades do not depend on it.

tests/test_under_load.py grades the sample class beside it and benchmarks/grading.py times a run
beside it; both must see every score as deserved. Two CPU-bound processes per usable core, each
ending by itself after a bounded time whatever happens to the caller.
"""
from __future__ import annotations

import contextlib
import subprocess
import sys
import time

from perfcourse.grading import demand

SECONDS = 3600  # each busy process ends by itself after this
# Busy all the time: slows everything alike.
STEADY = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
# Busy for 0.2-1.5 s, idle for 0.2-1.5 s, at random: the bursts of a kernel starting beside a
# grade cell, which a steady load never makes.
BURSTS = ("import random, time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n"
          "    busy = time.monotonic() + random.uniform(0.2, 1.5)\n"
          "    while time.monotonic() < busy:\n        pass\n"
          "    time.sleep(random.uniform(0.2, 1.5))\n")


@contextlib.contextmanager
def busy_machine(script: str):
    """Two processes per usable core running `script` (STEADY or BURSTS), stopped on the way out;
    yields how many."""
    spinners = [subprocess.Popen([sys.executable, "-c", script.format(seconds=SECONDS)])
                for _ in range(2 * len(demand.cores()))]
    try:
        time.sleep(1)
        if any(p.poll() is not None for p in spinners):
            raise RuntimeError("a busy process ended before the work it was to run beside")
        yield len(spinners)
    finally:
        for p in spinners:
            p.kill()
            p.wait(timeout=30)
