"""Grade a timer by what it reports for calls whose length this side picks privately, whatever clock it reads.

The student's timer is handed a real jitted function (`perfcourse.kernel.probes.timing`), compiled
before it is handed over. Each call of it does two things, both of lengths drawn here at grading time:

- it asks this side's `Schedule` for its work, and this side *holds* the answer for a while
  before giving it: wall time that costs no CPU and that only a wall clock read around the call
  measures (a timer reading `time.process_time()` misses it), of a length the student's process
  never learns in advance;
- it dispatches a device loop whose trip count the answer gives: the call returns before its
  result is ready (XLA's CPU client dispatches the program asynchronously, as an accelerator
  would), and the result is ready only after that much work.

The trip counts turn into seconds through a calibration run in this kernel on the same machine
(the fastest of a few runs), so a slow machine only lengthens everything alike:

    a synchronized wall-clock measurement of a call  >= its hold + SYNC_FRACTION * its work
    an unsynchronized one                             ~  its hold: the work is missing
    one read with a CPU clock                         ~  its work: the hold is missing (holds are
                                                        at least as long as the work)

Each call's work and hold are drawn afresh for every run (no length is a constant a timer could
know): warm calls' work spreads over WARM_WORK_SPREAD times and their holds over another range
(two shuffled ladders with jitter, drawn apart), so a timer's samples must follow each call's
work and be each call's length; the first call's work is several times the longest warm
call's, so a warm sample that contains the first call stands out against the first call itself.
Whatever clock the timer reads (perf_counter, monotonic, time_ns, a clock bound as a default
argument) and however it synchronizes (jax.block_until_ready, .block_until_ready(), converting to
NumPy), an honest timer passes on any machine speed.

What this side *observes* itself: how many calls were made (each asks the schedule), the holds
(kept here, never sent), and, on its own clock, the time from each call to the next (the last: to
the timer's return), which must cover the call's hold and its work, and which an honest timer's
warm samples match up to the machine's jitter (a mean of the calls does not). The spans tell a
timer's mistake from a busy machine: a run in which this side saw the calls themselves stall (a
warm call as long as the first, short calls as long as long ones) decides nothing and is run
again, so a burst of other processes during the timed calls costs an honest timer a rerun, not
its marks. A timer that sleeps instead of waiting puts its sleeps in the spans too, so this side
cannot tell a random sleep from a stall: the medians alone judge it, about half its runs pass,
and a failed one is undecided, so it passes nearly always (a known limit: docs/authors/checks.md).
What stays *evidence only*: each call's trip count must reach the student's process, which
dispatches the work. It passes through nothing student code can replace on a module or a class:
the instrument binds what it calls at the kernel's start-up, the function handed over reaches
nothing through its globals, and what the count passes through on its way (the channel's classes
and objects, `json`, `socket`, the JAX names) is kept as it was then and flagged when replaced
(kernel/library.py; a timer that once learned the counts by replacing `jax.numpy.int32`, slept each
call's predicted work and passed is now the unsynchronized timer it is:
adversarial/performance-01/spies-on-trip-counts.py). A timer that reads its instrument's internals
(the schedule's call in the function's closure, or JAX's own machinery rewritten while the
program is first built), calibrates the course's loop and predicts each call's work from its trip
count, while still timing the call itself with a wall clock, would still pass. Reaching the
internals is flagged (the scan of submitted code: closures, gc, frames, sys.modules; the audit
hook: gc walks, frames, trace functions), and such a timer has to measure every hold correctly
anyway: in practice, timing each call with a wall clock, which is the task.
"""
from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field

from . import CheckFailed, remote

WARM_WORK = (0.008, 0.048)   # seconds of device work of a warm call: the ladder spans this range
WARM_WORK_SPREAD = WARM_WORK[1] / WARM_WORK[0]
FIRST_FACTOR = (4.0, 6.0)    # the first call's work, in the longest warm call's: drawn per run
HOLD_FACTOR = (1.0, 2.5)     # each call's hold, in the longest warm call's work: the warm calls' a second
                             # shuffled ladder, drawn apart from the work's (the first call's at random
                             # in the range), so every hold is at least the longest work (a CPU clock
                             # misses it) and says nothing of its call's work: a hold that did (one
                             # tried: the whole length a ladder, the hold what the work left of it)
                             # tells a timer that never waits each call's work from how long the
                             # call took to return; and the calls' lengths differ by tens of ms
SYNC_FRACTION = 0.25         # a synchronized measurement spans at least this much of its work: the
                             # margin for a calibration taken on a busier moment than the measurement
                             # (up to 4x slower); an unsynchronized call measures its hold and a
                             # dispatch, under a millisecond, where 0.25 of the least work is 2 ms


FOLLOW_FRACTION = 0.5        # the longer half of the warm calls exceeds the shorter by at least this
                             # share of their difference in work: halfway between a timer that follows
                             # its calls (all of it, less scheduling noise) and a fixed sleep (none)
FOLLOW_GAP = 0.25            # a run whose samples do not follow is the timer's mistake only when this
                             # side's spans of the same calls grew by this share of the difference in
                             # work more than the samples did (a fixed sleep: all of it)
TRACK_FRACTION = 0.7         # no two warm samples exceed this side's spans of their calls by more than
                             # this share of the spans' own variation (median absolute deviation): a
                             # mean exceeds the spans of the shorter half of the calls by about that
                             # variation or more; an honest sample never exceeds its span but by the
                             # time from its clock read to its call reaching this side (a millisecond
                             # or a few, loaded), whatever the timer does between calls
VARY_FRACTION = 0.5          # the warm samples vary by at least this share of the variation of the
                             # calls' planned lengths (hold and work; median absolute deviations): an
                             # honest timer's by all of it, less calibration error, plus jitter
RUNS = 4                     # runs a verdict may take: it stops at a pass or at a second failure the
                             # timer explains; a run the machine explains (this side saw the calls
                             # stall) counts for neither


def plan(warm_calls: int, rng: random.Random) -> tuple[list[float], list[float]]:
    """(work, hold) seconds for the first call and `warm_calls` warm calls, drawn here.

    Warm works form a ladder over WARM_WORK with a random position on each rung, shuffled: every
    run has short and long calls (so samples must follow their own calls), and no length repeats.
    The warm calls' holds form a second ladder, shuffled apart from the first: the calls differ
    in length by tens of milliseconds (in 19 runs of 20 by at least a loaded machine's jitter), so
    samples that are not each call's own cannot pass for them, and no hold tells its call's work.
    """
    low, high = WARM_WORK
    rungs = [low * (high / low) ** ((k + rng.random()) / warm_calls) for k in range(warm_calls)]
    rng.shuffle(rungs)
    longest = max(rungs, default=high)
    least, most = HOLD_FACTOR
    holds = [longest * (least + (most - least) * (k + rng.random()) / warm_calls) for k in range(warm_calls)]
    rng.shuffle(holds)
    work = [rng.uniform(*FIRST_FACTOR) * longest] + rungs
    return work, [rng.uniform(*HOLD_FACTOR) * longest] + holds


class Schedule:
    """The work and hold of every call, in order; counts the calls the student's timer makes.

    `next_call` waits out the call's hold here, then gives its trip count; calls beyond the plan
    repeat its last entry. Student code holds this object only as a stand-in that can call
    `next_call` and read public attributes, so everything else is kept under underscore names,
    which never cross: it learns each call's trip count once its hold is over, never a length in
    seconds.
    """

    def __init__(self, iterations: list[int], holds: list[float], beyond: tuple[int, float] | None = None):
        self._iterations, self._holds = list(iterations), list(holds)
        self._beyond = beyond           # (iterations, hold) of calls past the plan; None: its last entry's
        self._served: list[int] = []    # the plan's index of each call made
        self._asked: list[float] = []   # when each call asked, on this side's clock
        self._answered: list[float] = []  # when its hold was over and its count sent
        self._ready: list = []           # the queued instrument's word: the previous result was ready

    def next_call(self, previous_ready=None) -> int:
        self._asked.append(time.monotonic())
        self._ready.append(previous_ready is True)
        index = min(len(self._served), len(self._iterations) - 1)
        past = self._beyond is not None and len(self._served) >= len(self._iterations)
        self._served.append(index)
        time.sleep(self._beyond[1] if past else self._holds[index])
        self._answered.append(time.monotonic())
        return self._beyond[0] if past else self._iterations[index]


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
    holds: list           # seconds each call was held here, in call order
    spans: list           # seconds from each call to the next (the last: to the timer's return),
                          # measured on this side: one per call made


def run_timer(timer, warm_calls: int, *, keyword: str = "warm_calls", rng=None) -> TimerRun:
    """Run the student's `timer(fn, *args, keyword=warm_calls)` on the instrument; judge nothing yet."""
    rng = rng or random.SystemRandom()
    calibration = calibrate()
    work, holds = plan(warm_calls, rng)
    schedule = Schedule([calibration.iterations(seconds) for seconds in work], holds)
    value = remote.probe("timing.run_timer", timer, schedule, keyword, warm_calls)
    returned = time.monotonic()
    first, warm = _pair(value)
    asked = schedule._asked + [returned]
    spans = [later - earlier for earlier, later in zip(asked, asked[1:])]
    served = schedule._served
    return TimerRun(first, warm, len(served), [work[i] for i in served], [holds[i] for i in served], spans)


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


@dataclass
class Verdict:
    """What one run shows: the timer's problems, and whether this side could tell them from the machine's.

    `decided` is False when this side's own clock saw what the problem describes happen to the
    calls themselves (a warm call that took as long as the first, calls that did not grow with
    their work): another process stalled them, so the run says nothing about the timer.
    """
    problems: list = field(default_factory=list)
    decided: bool = True


def first_call_problems(run: TimerRun, warm_calls: int, keyword: str = "warm_calls") -> Verdict:
    """One first call timed on its own, then exactly `warm_calls` warm calls, none of them the first."""
    if run.calls != warm_calls + 1:
        return Verdict([f"with {keyword}={warm_calls} the timer called fn {run.calls} time(s); expected 1 first "
                        f"call and {warm_calls} warm calls ({warm_calls + 1}), with no untimed warm-up call"])
    if len(run.warm) != warm_calls:
        return Verdict([f"with {keyword}={warm_calls} the timer returned {len(run.warm)} warm samples"])
    # Whether a sample contains the first call shows in its length only when the timer waits
    # for results; an unsynchronized timer loses the synchronization cell, not this one.
    if run.first < run.holds[0] + SYNC_FRACTION * run.work[0]:
        return Verdict()
    long = [call for call, sample in enumerate(run.warm, start=1) if sample >= run.first]
    if not long:
        return Verdict()
    # A warm call this side also saw last as long as the first measurement was stalled, not mixed up.
    stalled = all(run.spans[call] >= run.first for call in long)
    return Verdict(["a warm sample is as long as the first call: keep the first call out of the warm samples"],
                   decided=not stalled)


def synchronization_problems(run: TimerRun) -> Verdict:
    """Every measurement ends after its call's result is ready, and each sample is its own call's.

    Samples belong to the last calls (an untimed warm-up call before them is the first-call
    cell's business, not this one's). A timer that reports the first call's measurement again as
    its first warm sample (so every later sample sits one call early) made the first-call cell's
    mistake, not this one's: its samples are judged against the calls they measured.
    """
    samples = [run.first, *run.warm]
    if run.calls < len(samples):
        return Verdict([f"the timer reported {len(samples)} measurements of only {run.calls} call(s)"])
    offset = run.calls - len(samples)
    measured = list(range(offset, run.calls))  # the call each sample measured
    verdict = _sample_problems(run, samples, measured)
    if verdict.problems and run.warm and run.warm[0] == run.first and offset == 0:
        shifted = _sample_problems(run, samples, [0, *range(len(samples) - 1)])
        verdict = verdict if shifted.problems else shifted
    return verdict


def _sample_problems(run: TimerRun, samples: list[float], measured: list[int]) -> Verdict:
    """`samples[i]` judged as the measurement of call `measured[i]`."""
    # What the timer reports, and what this side saw: a call timed with a wall clock that waits
    # for its result spans the hold (kept here) and the work; it cannot make its next call (or
    # return) before both are over, whatever numbers it reports.
    need = [run.holds[call] + SYNC_FRACTION * run.work[call] for call in range(run.calls)]
    late = sorted({call + 1 for sample, call in zip(samples, measured) if sample < need[call]}
                  | {call + 1 for call in set(measured) if run.spans[call] < need[call]})
    if late:
        return Verdict([f"the measurements of call(s) {late} (call 1 is the first call) are shorter than the "
                        "calls: read a wall clock (time.perf_counter) and wait for the result "
                        "(jax.block_until_ready) before reading it again"])
    # Longer in proportion to the extra work, not merely longer: a timer that reports a fixed
    # sleep instead of the call would otherwise pass. Each sample less its call's hold is that
    # call's share of the work: the longer half of the warm calls exceeds the shorter half by
    # FOLLOW_FRACTION of the difference in work. Medians of halves, not every pair's order: one
    # call stalled on its way to this side lengthens its sample where this side's clock puts the
    # stall in the call before, and made-up samples are told by the tracking rule instead.
    warm = [(run.work[call], sample - run.holds[call], run.spans[call] - run.holds[call])
            for sample, call in zip(samples[1:], measured[1:])]
    if len(warm) < 2:
        return Verdict()
    warm.sort()
    half = len(warm) // 2
    short, long = warm[:half], warm[-half:]
    extra = statistics.median(entry[0] for entry in long) - statistics.median(entry[0] for entry in short)

    def growth(pick) -> float:
        return statistics.median(map(pick, long)) - statistics.median(map(pick, short))

    measured_growth, seen_growth = growth(lambda entry: entry[1]), growth(lambda entry: entry[2])
    if measured_growth >= FOLLOW_FRACTION * extra:
        return _tracking_problems(run, samples[1:], measured[1:])
    problem = ["the warm samples do not follow their own calls (calls with several times the work took "
               "hardly longer): time each call on its own, waiting for its result, and do not average "
               "or reuse samples"]
    # The timer's mistake only where this side saw the calls grow clearly more than the samples
    # did. Otherwise the calls themselves did not follow their work: a burst of other processes
    # stalled the short ones, the work ran short of its calibration (a busy moment calibrated it),
    # or the timer sleeps instead of waiting (which it does in every run, and so fails when the
    # runs run out).
    return Verdict(problem, decided=seen_growth - measured_growth >= FOLLOW_GAP * extra)


def _tracking_problems(run: TimerRun, warm: list[float], measured: list[int]) -> Verdict:
    """Each warm sample is its own call's length: no longer than this side's span of that call (from
    the call to the next) but by the time from the timer's clock read to the call reaching this
    side, microseconds on a quiet machine, a few milliseconds on a loaded one. Shorter is allowed:
    whatever the timer does between calls (gc.collect(), bookkeeping) lies in the span, not the
    sample.

    Samples that follow their calls' work can still be made up (a mean of the warm calls, on a
    run whose holds happened to make it look so): a mean is longer than the spans of the shorter
    calls, by as much as the spans vary, and does not vary itself. One sample may exceed its span
    by a stall on its way to this side; the second longest excess is judged. Undecided: a run in
    which the machine's jitter outgrew TRACK_FRACTION of the spread says nothing, and one that did
    not is passed; made-up samples fail every run.
    """
    spans = [run.spans[call] for call in measured]
    excess = sorted(sample - span for sample, span in zip(warm, spans))[-2]
    # And they vary as the calls were planned to: a mean, or any one number reported for every
    # call, does not vary at all, however the spans came out on a loaded machine.
    planned = [run.holds[call] + run.work[call] for call in measured]
    if excess <= TRACK_FRACTION * _spread(spans) and _spread(warm) >= VARY_FRACTION * _spread(planned):
        return Verdict()
    return Verdict(["the warm samples are not their own calls' lengths (the grader timed every call too): "
                    "time each call on its own, waiting for its result, and do not average, reuse or "
                    "reorder samples"], decided=False)


def _spread(values: list[float]) -> float:
    """Median absolute deviation from the median: one stalled call moves it little."""
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)


def confirmed_problems(judge, make_run) -> list[str]:
    """A timing verdict that a busy moment cannot decide: runs are repeated, calibrating again
    before each, until one passes, the timer fails two, or RUNS are done. A run this side saw
    stalled by another process (`Verdict.decided` False) counts for neither: an honest timer
    passes a quiet run; a wrong one fails every run, whatever the load."""
    global _calibration
    failures, problems = 0, []
    for attempt in range(RUNS):
        if attempt:
            _calibration = None
        verdict = judge(make_run())
        if not verdict.problems:
            return []
        problems, failures = verdict.problems, failures + verdict.decided
        if failures == 2:
            break
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


# --- throughput: calls queued back to back, one wait at the end -------------------------------
#
# `time_queued(fn, *args, calls=N)` reports seconds per call of N calls dispatched back to back
# and waited for once, after one first call made and waited for before its clock starts. It is
# handed the queued instrument: each call's work begins only when the previous call's result is
# ready (the program takes it as an argument), so the calls run one after another in dispatch
# order, as on one accelerator device, and the last result ready means every result is. Each
# call also tells this side whether the previous call's result was ready when it was made, and
# the probe whether the last result was ready when the timer returned (the instrument's word:
# from the student's process, like the trip counts). With `ask`/`answer` when each call reached
# this side and when its hold ended (its work starts no earlier), `returned` when the timer
# returned, `T` the reported seconds per call times N, `w` each call's calibrated work and
# done(k) = max over j <= k of answer(j) + SYNC_FRACTION * (w(j) + ... + w(k)), the earliest
# its work can be complete if the calibration holds:
#
#                what holds for an honest timer on any machine:     what the calibration predicts:
#   calls        exactly N + 1 calls made (the first, then N)
#   first apart  the first result ready when call 1 was made;      ask(1) >= done(0) and
#                T <= returned - answer(0) (the first call is held  T <= returned - done(0)
#                a tenth of a second: a clock started before it
#                counts the hold)
#   final wait   the last result ready when the timer returned;    returned >= done(N) and
#                T >= answer(N) - ask(1) (the first queued call is  T >= done(N) - ask(1)
#                held longer than all the queued work takes: a
#                CPU clock misses the hold)
#   clock start  -                                                  T >= returned - ask(1) - half
#                                                                   the first queued call's hold
#   queued       -                                                  all queued calls but one made
#                                                                   while the previous result was
#                                                                   not ready (the instrument's word)
#                                                                   and ask(k + 1) < done(k) for some
#
# A run that fails the left column decides: an honest timer meets it however loaded the machine.
# The right column an honest timer misses when the machine ran the work faster than calibrated
# (a calibration taken at a busier moment: under a load of 20 on 2 cores a latency timer once met
# the timed queued rule, which only work run in under a fourth of its calibrated time allows) or
# when its own calls were stalled: such a run decides
# nothing and is run again, calibrating again, up to QUEUED_RUNS. The wrong readings fail every
# run: the latency method (waiting after each call) is ready before every call, by the
# instrument's word; a first call not waited for, or no wait at the end, shows a result not ready
# (unless the process stalled until the work was done, in which run it measured what an honest
# timer does); a clock started before the first call counts its hold; other numbers of calls are
# counted.
QUEUED_CALLS = (4, 6)         # the calls a run asks for, drawn (a timer must honour the number)
QUEUED_WORK = (0.050, 0.120)  # seconds of work of a queued call: a shuffled ladder over this range
QUEUED_FIRST = (2.0, 3.0)     # the first call's work, in the longest queued call's
QUEUED_HOLD = (0.0005, 0.004)  # each call's hold: short, so the host keeps the queue full and a
                              # timer that does not wait reads its clock long before the work is done
QUEUED_PAUSE = (1.2, 1.6)     # but the first queued call's hold, in all the queued calls' work: wall
                              # time with the device idle, which a CPU clock misses (on a CPU backend
                              # the work runs on the timer's own process, so process time counts it)
QUEUED_FIRST_HOLD = (0.08, 0.12)  # the first call's hold: wall time a clock started before it counts
BEYOND = (1, 0.0)             # calls past the plan (a timer that ignores `calls`): no work, no hold
QUEUED_RUNS = 3               # runs a throughput verdict may take, while they fail only what the
                              # calibration predicts


def plan_queued(calls: int, rng: random.Random) -> tuple[list[float], list[float]]:
    """(work, hold) seconds of the first call and `calls` queued calls, drawn here."""
    low, high = QUEUED_WORK
    rungs = [low * (high / low) ** ((k + rng.random()) / calls) for k in range(calls)]
    rng.shuffle(rungs)
    work = [rng.uniform(*QUEUED_FIRST) * max(rungs)] + rungs
    holds = [rng.uniform(*QUEUED_HOLD) for _ in work]
    holds[0] = rng.uniform(*QUEUED_FIRST_HOLD)
    holds[1] = rng.uniform(*QUEUED_PAUSE) * sum(rungs)
    return work, holds


@dataclass
class QueuedRun:
    seconds: float        # what the timer reported: seconds per call
    asked_for: int        # the `calls` it was asked for
    work: list            # calibrated seconds of each call's work, in call order
    asked: list           # when each call reached this side, on this side's clock
    answered: list        # when each call's hold ended and its count went back
    returned: float       # when the timer returned
    ready: list = field(default_factory=list)  # per call, the instrument's word: the previous result was
                                               # ready when it was made
    last_ready: bool = True  # the instrument's word: the last result was ready when the timer returned


def run_queued(timer, calls: int, *, keyword: str = "calls", rng=None) -> QueuedRun:
    """Run the student's `timer(fn, *args, keyword=calls)` on the queued instrument; judge nothing yet."""
    rng = rng or random.SystemRandom()
    calibration = calibrate()
    work, holds = plan_queued(calls, rng)
    schedule = Schedule([calibration.iterations(seconds) for seconds in work], holds, beyond=BEYOND)
    answer = remote.probe("timing.run_queued_timer", timer, schedule, keyword, calls)
    returned = time.monotonic()
    try:
        value, last_ready = answer
    except (TypeError, ValueError):
        raise CheckFailed("the course's throughput instrument did not answer (was its code replaced?)") from None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise CheckFailed(f"the timer should return seconds per call (a float), got {type(value).__name__}") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise CheckFailed(f"the timer should return a positive number of seconds per call, got {seconds!r}")
    served = schedule._served
    return QueuedRun(seconds, calls, [0.0 if k >= len(work) else work[k] for k in range(len(served))],
                     list(schedule._asked), list(schedule._answered), returned, list(schedule._ready),
                     last_ready is True)


def queued_problems(run: QueuedRun, keyword: str = "calls") -> Verdict:
    """What one run of a throughput timer shows (see the comment above QUEUED_CALLS)."""
    n = run.asked_for
    if len(run.asked) != n + 1:
        return Verdict([f"with {keyword}={n} the timer called fn {len(run.asked)} time(s); expected {n + 1}: "
                        f"one first call, waited for before the clock starts, then {n} calls queued"])
    done = []  # the earliest moment each call's work can be complete, if the calibration holds
    for k in range(n + 1):
        done.append(max(run.answered[j] + SYNC_FRACTION * sum(run.work[j:k + 1]) for j in range(k + 1)))
    total = run.seconds * n
    first = ("the measurement includes the first call: make the first call and wait for its result "
             "(jax.block_until_ready) before the clock starts, then time the queued calls only")
    final = (f"the {n} calls' work was not complete when the clock was read (the reported seconds per call "
             f"times {n} is shorter than the work): keep every result and wait for them "
             "(jax.block_until_ready(outs)) once, after the last call, before reading the clock")
    late = ("the clock started after the first queued call came back: start it before the first of the "
            f"{n} queued calls, and divide the time of all {n} by {n}")
    latency = ("each call was made only after the previous call's result was ready: that times latency, one "
               "call at a time. Dispatch every call back to back, keep the results, and wait once, after the last")
    # What holds for an honest timer on any machine: a run that fails it decides.
    if not run.ready[1] or total > run.returned - run.answered[0]:
        return Verdict([first])
    if not run.last_ready or total < run.answered[n] - run.asked[1]:
        return Verdict([final])
    # What the calibration predicts: a machine faster than calibrated, or stalled, decides nothing.
    if run.asked[1] < done[0] or total > run.returned - done[0]:
        return Verdict([first], decided=False)
    if run.returned < done[n] or total < done[n] - run.asked[1]:
        return Verdict([final], decided=False)
    # A clock started once the first queued call came back misses its hold (the work, slower than
    # calibrated on a loaded machine, can still meet the bound above): an honest one misses only the ways.
    if total < run.returned - run.asked[1] - (run.answered[1] - run.asked[1]) / 2:
        return Verdict([late], decided=False)
    # Two queued calls or more made after the previous result was ready were waited for (a timer that
    # waits after every call but the last two is a latency timer too); one alone may be an honest
    # timer's host stalled longer than a call's work.
    if sum(run.ready[2:]) >= 2 or not any(run.asked[k + 1] < done[k] for k in range(1, n)):
        return Verdict([latency], decided=False)
    return Verdict()


def check_queued(timer, keyword: str = "calls", rng=None) -> None:
    """Throughput: one first call apart, `calls` calls queued, one wait at the end. A run that fails only
    what the calibration predicts is run again, calibrating again, up to QUEUED_RUNS."""
    global _calibration
    rng = rng or random.SystemRandom()
    for attempt in range(QUEUED_RUNS):
        if attempt:
            _calibration = None
        verdict = queued_problems(run_queued(timer, rng.randint(*QUEUED_CALLS), keyword=keyword, rng=rng), keyword)
        if not verdict.problems:
            return
        if verdict.decided:
            break
    raise CheckFailed(verdict.problems[0])
