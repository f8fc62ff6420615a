"""Grade a timer by what it reports for work whose length is known here, whatever clock it reads.

The student's timer is handed a real jitted function (`perfcourse.kernel.probes.timing`): each
call dispatches a device loop whose trip count this side picks, so the result is ready only
after that much work, and the call returns before it is. Before each call the function asks this
side's `Schedule` for its trip count, so the calls are counted here, not by the student's process.
The trip counts turn into seconds through a calibration run in this kernel on the same machine
(the fastest of a few runs), so a slow machine only lengthens everything alike:

    a synchronized measurement of a call   >= SYNC_FRACTION * that call's calibrated work
    an unsynchronized one                   ~  dispatch, far below it

The first call's work is FIRST_FACTOR times the longest warm call's, so a warm sample that
contains the first call stands out against the first call itself. Warm calls get different
amounts of work (short and long, shuffled), so averaged or reused samples do not follow them.
Whatever clock the timer reads (perf_counter, monotonic, time_ns, a clock bound as a default
argument) and however it synchronizes (jax.block_until_ready, .block_until_ready(), converting
to NumPy), an honest timer passes on any machine speed.

What a forger would need: a probe that calls the schedule exactly once per call it claims and
reports, for each call, a duration at least SYNC_FRACTION of work it cannot see in seconds, long
calls longer than short ones by SYNC_FRACTION of the difference (a fixed sleep instead of a wait
fails there), and that also lets that much time pass, on this side's clock,
between one call and the next: in practice, running the work and waiting for it, which is the task.
"""
from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field

from . import CheckFailed, remote

SHORT_SECONDS = 0.010        # calibrated work of a short warm call
LONG_SECONDS = 0.040         # of a long one (4x: averaging or reusing samples cannot match both)
FIRST_FACTOR = 5             # the first call's work, in long warm calls
SYNC_FRACTION = 0.4          # a synchronized measurement spans at least this much of its work (margin
                             # for a calibration taken on a busier moment than the measurement)


class Schedule:
    """The work of every call, in order; counts the calls the student's timer makes.

    `seconds[i]` is the calibrated length of the work of `iterations[i]`; calls beyond the plan
    repeat its last entry. Student code holds this object only as a stand-in that can call
    `next_call` and read public attributes, so everything else is kept under underscore names,
    which never cross: it learns each call's trip count, never its length in seconds.
    """

    def __init__(self, iterations: list[int], seconds: list[float]):
        self._iterations, self._seconds = list(iterations), list(seconds)
        self._served: list[float] = []
        self._asked: list[float] = []   # when each call asked, on this side's clock

    def next_call(self) -> int:
        self._asked.append(time.monotonic())
        index = min(len(self._served), len(self._iterations) - 1)
        self._served.append(self._seconds[index])
        return self._iterations[index]


@dataclass
class Calibration:
    seconds_per_iteration: float

    def iterations(self, seconds: float) -> int:
        return max(1, int(seconds / self.seconds_per_iteration))


_calibration: Calibration | None = None


def calibrate() -> Calibration:
    """Seconds per loop iteration on this machine: the fastest of a few synchronized runs here."""
    global _calibration
    if _calibration is None:
        from ..kernel.probes import timing as instrument  # the same program, run in this process

        import jax

        jax.block_until_ready(instrument.spin(10))  # compile outside the measurement
        iterations, best = 2_000_000, math.inf
        for _ in range(5):
            start = time.perf_counter()
            jax.block_until_ready(instrument.spin(iterations))
            best = min(best, time.perf_counter() - start)
            time.sleep(0.002)  # spread the runs: the fastest of them is the quiet machine
        _calibration = Calibration(best / iterations)
    return _calibration


@dataclass
class TimerRun:
    first: float
    warm: list
    calls: int
    work: list            # calibrated seconds of the work each call got, in call order
    spans: list = field(default_factory=list)  # seconds from each call to the next (the last: to
                                               # the timer's return), measured on this side


def run_timer(timer, warm_calls: int, *, keyword: str = "warm_calls", rng=None) -> TimerRun:
    """Run the student's `timer(fn, *args, keyword=warm_calls)` on the instrument; judge nothing yet."""
    rng = rng or random.Random()
    calibration = calibrate()
    warm_work = [SHORT_SECONDS if i % 2 else LONG_SECONDS for i in range(warm_calls)]
    rng.shuffle(warm_work)
    work = [FIRST_FACTOR * LONG_SECONDS] + warm_work
    schedule = Schedule([calibration.iterations(seconds) for seconds in work], work)
    value = remote.probe("timing.run_timer", timer, schedule, keyword, warm_calls)
    returned = time.monotonic()
    first, warm = _pair(value)
    asked = schedule._asked + [returned]
    spans = [later - earlier for earlier, later in zip(asked, asked[1:])]
    return TimerRun(first, warm, len(schedule._served), list(schedule._served), spans)


def _pair(value) -> tuple[float, list[float]]:
    """(first_call_seconds, [warm seconds, ...]) as plain floats, or a clear CheckFailed."""
    try:
        first, warm = value
        first, warm = float(first), [float(s) for s in warm]
    except (TypeError, ValueError):
        raise CheckFailed("the timer should return (first_call_seconds, [warm seconds, ...]), "
                             f"got {type(value).__name__}") from None
    if not all(math.isfinite(s) for s in (first, *warm)):
        raise CheckFailed("timings should be finite numbers of seconds")
    return first, warm


def first_call_problems(run: TimerRun, warm_calls: int, keyword: str = "warm_calls") -> list[str]:
    """One first call timed on its own, then exactly `warm_calls` warm calls, none of them the first."""
    if run.calls != warm_calls + 1:
        return [f"with {keyword}={warm_calls} the timer called fn {run.calls} time(s); expected 1 first call "
                f"and {warm_calls} warm calls ({warm_calls + 1}), with no untimed warm-up call"]
    if len(run.warm) != warm_calls:
        return [f"with {keyword}={warm_calls} the timer returned {len(run.warm)} warm samples"]
    # Whether a sample contains the first call shows in its length only when the timer waits
    # for results; an unsynchronized timer loses the synchronization cell, not this one.
    if run.first >= SYNC_FRACTION * run.work[0] and any(sample >= run.first for sample in run.warm):
        return ["a warm sample is as long as the first call: keep the first call out of the warm samples"]
    return []


def synchronization_problems(run: TimerRun) -> list[str]:
    """Every measurement ends after its call's result is ready, and each sample is its own call's.

    Samples belong to the last calls (an untimed warm-up call before them is the first-call
    cell's business, not this one's).
    """
    samples = [run.first, *run.warm]
    if run.calls < len(samples):
        return [f"the timer reported {len(samples)} measurements of only {run.calls} call(s)"]
    offset = run.calls - len(samples)
    work = run.work[offset:]
    # What the timer reports, and what this side saw: a call that waits for its result cannot
    # make its next call (or return) before the work is done, whatever numbers it reports.
    late = [offset + index + 1 for index, (sample, seconds, span)
            in enumerate(zip(samples, work, run.spans[offset:] or [math.inf] * len(samples)))
            if sample < SYNC_FRACTION * seconds or span < SYNC_FRACTION * seconds]
    if late:
        return [f"the clock was read before the result of call(s) {late} was ready (call 1 is the first call): "
                "wait for the result (jax.block_until_ready) before reading the clock"]
    long = [s for s, w in zip(run.warm, work[1:]) if w == LONG_SECONDS]
    short = [s for s, w in zip(run.warm, work[1:]) if w == SHORT_SECONDS]
    # Longer by a share of the extra work, not merely longer: a timer that reports a fixed sleep
    # instead of the call would otherwise pass half the time, on noise alone.
    if long and short and (statistics.median(long) - statistics.median(short)
                           < SYNC_FRACTION * (LONG_SECONDS - SHORT_SECONDS)):
        return ["the warm samples do not follow their own calls (calls with 4x the work took hardly longer): "
                "time each call on its own, waiting for its result, and do not average or reuse samples"]
    return []


def confirmed_problems(judge, make_run) -> list[str]:
    """A timing verdict that a busy moment cannot decide: a failing run is repeated once after
    calibrating again, and only a failure of both counts. An honest timer passes the second run
    (one warm call stalled by another process can look as long as the first call, or as early as
    an unsynchronized read); a wrong one fails both, whatever the load."""
    problems = judge(make_run())
    if problems:
        global _calibration
        _calibration = None
        problems = judge(make_run())
    return problems


def check_first_call_apart(timer, warm_counts=(4, 9), keyword: str = "warm_calls") -> None:
    for warm_calls in warm_counts:
        problems = confirmed_problems(lambda run: first_call_problems(run, warm_calls, keyword),
                                      lambda: run_timer(timer, warm_calls, keyword=keyword))
        if problems:
            raise CheckFailed(problems[0])


def check_synchronized(timer, warm_calls: int = 6, keyword: str = "warm_calls") -> None:
    problems = confirmed_problems(synchronization_problems, lambda: run_timer(timer, warm_calls, keyword=keyword))
    if problems:
        raise CheckFailed(problems[0])
