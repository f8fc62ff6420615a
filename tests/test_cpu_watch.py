"""grading/cpu_watch.py and the recount's stall verdict (grading/recount.py's `stall_of`): a run
that sleeps or spins is the student's stall, one that load starved of CPU is not."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from perfcourse.grading import cpu_watch, recount

SLEEP = "import time\ntime.sleep(60)"
SPIN = "while True:\n    pass"


def test_the_verdict_of_each_way_a_run_is_stopped():
    usage = cpu_watch.Usage
    ended = cpu_watch.Ending(0, None, usage(1.0, 0.1), 2.0)
    spun = cpu_watch.Ending(None, "cpu", usage(10.0, 0.2), 11.0)
    slept = cpu_watch.Ending(None, "wall", usage(0.8, 0.5), 40.0)
    starved = cpu_watch.Ending(None, "wall", usage(0.8, 38.0), 40.0)
    unknown = cpu_watch.Ending(None, "wall", usage(0.8, None), 40.0)
    assert recount.stall_of(ended, 40) is None
    assert recount.stall_of(spun, 40) == ("it did not finish within 10 s of CPU time (10.0 s of CPU in 11 s)", True)
    words, theirs = recount.stall_of(slept, 40)
    assert theirs and words.startswith("it did not finish within 40 s")  # recount-staller's reason line
    assert recount.stall_of(starved, 40) == ("the worker's load starved it of CPU (0.8 s of CPU in 40 s, 38 s "
                                            "waiting for one)", False)
    assert recount.stall_of(unknown, 40)[1] is False


def _child(code: str, starve_on: int | None = None) -> subprocess.Popen:
    """A Python child; where `starve_on` is a CPU, it pins itself there at the idle priority first."""
    if starve_on is not None:
        code = (f"import os\nos.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
                f"os.sched_setaffinity(0, {{{starve_on}}})\n{code}")
    return subprocess.Popen([sys.executable, "-S", "-c", code])


def _watched(process: subprocess.Popen, cpu_limit: float, ceiling: float, endings: dict, name: str) -> None:
    try:
        endings[name] = cpu_watch.watch(process, lambda: [process.pid], cpu_limit, ceiling, interval=0.05)
    finally:
        process.kill()
        process.wait()


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/schedstat"), reason="Linux gives no run delay here")
def test_a_sleeper_and_a_spinner_stall_and_a_run_starved_by_load_does_not():
    """Load simulated: a child pinned to one CPU at the idle priority (SCHED_IDLE) beside a spinner of
    normal priority on the same CPU runs a few percent of the time, waiting the rest; a sleeping child
    waits for nothing. The sleeper and the starved child pass the wall ceiling, the spinner its CPU
    limit; only the starved one is not the student's. About 2 s (one CPU spinning)."""
    cpu = sorted(os.sched_getaffinity(0))[-1]
    load = _child(f"import os\nos.sched_setaffinity(0, {{{cpu}}})\n{SPIN}")
    endings, runs = {}, []
    try:
        children = {"sleeper": (_child(SLEEP), 0.5), "starved": (_child(SPIN, starve_on=cpu), 0.5),
                    "spinner": (_child(SPIN), 0.3)}
        for name, (process, cpu_limit) in children.items():
            runs.append(threading.Thread(target=_watched, args=(process, cpu_limit, 2.0, endings, name)))
            runs[-1].start()
        for run in runs:
            run.join()
    finally:
        load.kill()
        load.wait()
    sleeper, starved, spinner = endings["sleeper"], endings["starved"], endings["spinner"]
    assert (sleeper.reason, starved.reason, spinner.reason) == ("wall", "wall", "cpu"), endings
    assert sleeper.usage.cpu < 0.5 and starved.usage.cpu < 0.5 and spinner.usage.cpu >= 0.3, endings
    assert recount.stall_of(sleeper, 2.0)[1] is True, endings      # it slept: the student's
    assert recount.stall_of(spinner, 2.0)[1] is True, endings      # its CPU limit used: the student's
    assert recount.stall_of(starved, 2.0)[1] is False, endings     # load starved it: not the student's
    assert starved.usage.waited >= 1.0 > sleeper.usage.waited, endings
