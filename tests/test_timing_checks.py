"""The timer checks on the real instrument, in one process: honest idioms pass, each mistake fails its own check.

Without a channel `remote.probe` runs the instrument in this process, so these tests need no
kernel. Each timer gets real jitted work whose length per call is known to the check.
"""
import dataclasses
import functools
import random
import statistics
import time
import timeit

import jax
import numpy as np
import pytest

from perfcourse.checks import timing


def synchronized(fn, *args, warm_calls=7):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    warm = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        warm.append(time.perf_counter() - start)
    return first, warm


def nanoseconds_bound_as_default(fn, *args, warm_calls=7, clock=time.perf_counter_ns):
    def once():
        start = clock()
        fn(*args).block_until_ready()
        return (clock() - start) / 1e9
    first = once()
    return first, [once() for _ in range(warm_calls)]


def monotonic_through_numpy(fn, *args, warm_calls=7):
    samples = []
    for _ in range(warm_calls + 1):
        start = time.monotonic()
        np.asarray(fn(*args))  # converting to NumPy waits for the result
        samples.append(time.monotonic() - start)
    return samples[0], samples[1:]


def timeit_partial(fn, *args, warm_calls=7):
    clock = functools.partial(timeit.default_timer)
    run = functools.partial(jax.block_until_ready)
    marks = [clock()]
    for _ in range(warm_calls + 1):
        run(fn(*args))
        marks.append(clock())
    durations = [b - a for a, b in zip(marks, marks[1:])]
    return durations[0], durations[1:]


def unsynchronized(fn, *args, warm_calls=7):
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    warm = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        fn(*args)
        warm.append(time.perf_counter() - start)
    return first, warm


def synchronized_after_the_clock(fn, *args, warm_calls=7):
    warm = []
    for i in range(warm_calls + 1):
        start = time.perf_counter()
        out = fn(*args)
        elapsed = time.perf_counter() - start
        jax.block_until_ready(out)
        warm.append(elapsed)
    return warm[0], warm[1:]


def sleeps_instead_of_waiting(fn, *args, warm_calls=7):
    # "Gives the device time to finish" with a fixed sleep, longer than the first call's work: every
    # sample is the sleep, whatever the work.
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        fn(*args)
        time.sleep(0.3)  # longer than any call's work (the first's is at most 6 x 48 ms)
        samples.append(time.perf_counter() - start)
    return samples[0], samples[1:]


def averaged(fn, *args, warm_calls=7):
    first, warm = synchronized(fn, *args, warm_calls=warm_calls)
    return first, [statistics.mean(warm)] * warm_calls


def warm_up_first(fn, *args, warm_calls=7):
    jax.block_until_ready(fn(*args))
    return synchronized(fn, *args, warm_calls=warm_calls)


def first_among_warm(fn, *args, warm_calls=7):
    samples = synchronized(fn, *args, warm_calls=warm_calls)
    return samples[0], [samples[0], *samples[1][:-1]]


def cpu_clock(fn, *args, warm_calls=7):
    # time.process_time() counts this process's CPU time: on a CPU backend the device work runs
    # on a thread of this process, so it counts; a call's wait for anything else does not.
    samples = []
    for _ in range(warm_calls + 1):
        start = time.process_time()
        jax.block_until_ready(fn(*args))
        samples.append(time.process_time() - start)
    return samples[0], samples[1:]


def reads_the_instruments_internals(fn, *args, warm_calls=7):
    # The forgery a red-team pass found: take the schedule from the function's closure, ask it
    # for each call's trip count and report the share of a first call of 0.2 s, a long warm call
    # of 40 ms and a short one of 10 ms that the old plan fixed, sleeping it off, never waiting.
    ask = next(c.cell_contents for c in fn.__closure__ if getattr(c.cell_contents, "__name__", "") == "next_call")
    trips = []
    for _ in range(warm_calls + 1):
        trips.append(ask())
    longest = max(trips[1:])
    seconds = [0.2] + [0.040 if n == longest or n > longest / 2 else 0.010 for n in trips[1:]]
    time.sleep(sum(seconds))
    return seconds[0], seconds[1:]


HONEST = [synchronized, nanoseconds_bound_as_default, monotonic_through_numpy, timeit_partial]


@pytest.mark.slow
@pytest.mark.parametrize("timer", HONEST, ids=lambda t: t.__name__)
def test_honest_timers_pass_both_checks(timer):
    timing.check_first_call_apart(timer, warm_counts=(3,))
    timing.check_synchronized(timer, warm_calls=4)


@pytest.mark.slow
@pytest.mark.parametrize("timer", [unsynchronized, synchronized_after_the_clock, averaged, cpu_clock],
                         ids=lambda t: t.__name__)
def test_unsynchronized_or_made_up_samples_fail_the_synchronization_check_only(timer):
    timing.check_first_call_apart(timer, warm_counts=(3,))
    with pytest.raises(AssertionError):
        timing.check_synchronized(timer, warm_calls=6)


@pytest.mark.slow
def test_a_fixed_sleep_instead_of_a_wait_fails_the_synchronization_check():
    # Every sample is long enough; only the difference between long and short calls shows the sleep.
    with pytest.raises(AssertionError, match="hardly longer"):
        timing.check_synchronized(sleeps_instead_of_waiting, warm_calls=4)


@pytest.mark.slow
@pytest.mark.parametrize("timer", [warm_up_first, first_among_warm], ids=lambda t: t.__name__)
def test_a_warm_up_call_or_the_first_call_among_warm_samples_fails_the_first_call_check(timer):
    with pytest.raises(AssertionError, match="first call"):
        timing.check_first_call_apart(timer, warm_counts=(3,))


@pytest.mark.slow
@pytest.mark.parametrize("timer", [warm_up_first, first_among_warm], ids=lambda t: t.__name__)
def test_a_first_call_mistake_costs_the_first_call_check_only(timer):
    timing.check_synchronized(timer, warm_calls=4)


@pytest.mark.slow
def test_a_timer_that_reads_its_instrument_and_never_waits_fails_the_synchronization_check():
    with pytest.raises(AssertionError, match="shorter than the calls"):
        timing.check_synchronized(reads_the_instruments_internals, warm_calls=6)


def test_no_trip_count_passes_anything_student_code_can_replace(monkeypatch):
    """The red team's timer learned each call's trip count by replacing jax.numpy.int32, which the
    instrument looked up at call time: the instrument binds what it calls at import, its function
    leads nowhere through __globals__, and what was replaced is named for the evidence."""
    import jax.numpy as jnp

    from perfcourse.kernel import library
    from perfcourse.kernel.probes import timing as instrument  # noqa: F401 (a kernel imports it at start-up)

    seen, handed = [], []
    real = jnp.int32

    def spy(*args, **kwargs):
        seen.append(args)
        return real(*args, **kwargs)

    def predicts_the_work(fn, *args, warm_calls=7):
        handed.append(fn)
        return synchronized(fn, *args, warm_calls=warm_calls)

    assert library.changed() == []
    monkeypatch.setattr(jnp, "int32", spy)
    monkeypatch.setattr(jax, "block_until_ready", jax.block_until_ready)  # the same object: no change
    timing.run_timer(predicts_the_work, 3)
    assert seen == []
    assert library.changed() == ["jax.numpy.int32"]
    assert set(handed[0].__globals__) == {"__builtins__", "make", "make_chained"}
    assert handed[0].__globals__["__builtins__"] == {}
    # The probe dispatcher, too, binds the import it finds probes with: a module of the student's
    # making never receives the schedule.
    import importlib

    from perfcourse.kernel import probes

    monkeypatch.setattr(importlib, "import_module", lambda *args, **kwargs: 1 / 0)
    jax.block_until_ready(probes.run("timing.spin", 10))
    assert library.changed() == ["jax.numpy.int32", "importlib.import_module"]
    monkeypatch.undo()
    assert library.changed() == []


@pytest.mark.slow
def test_a_callback_added_to_the_program_by_a_rewritten_jax_is_flagged():
    """JAX's own internals are not kept: a rewritten while_loop that adds a callback reporting the
    loop's bound learns the counts, but the program read back once built shows the call out."""
    import os
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent("""
        import jax
        from perfcourse.kernel.probes import timing as instrument  # the kernel's start-up
        from perfcourse.kernel import library
        from perfcourse.checks import timing
        from jax._src.lax.control_flow import loops
        seen, real = [], loops.while_loop

        def spying(cond, body, init):
            jax.debug.callback(lambda n: seen.append(int(n)), init[1])
            return real(cond, body, init)

        loops.while_loop = spying

        def timer(fn, *args, warm_calls=7):
            jax.block_until_ready([fn(*args) for _ in range(warm_calls + 1)])
            return 0.1, [0.1] * warm_calls

        timing.run_timer(timer, 3)
        jax.effects_barrier()
        print(bool(seen), library.changed())
    """)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.stdout.strip() == "True [\"the timing instrument's program (a call out of the device added to it)\"]", \
        proc.stdout + proc.stderr


def test_the_schedule_counts_calls_on_the_checking_side():
    run = timing.run_timer(synchronized, 3)
    assert run.calls == 4 and len(run.warm) == 3
    assert run.work[0] >= timing.FIRST_FACTOR[0] * max(run.work[1:])
    assert all(hold >= work for hold, work in zip(run.holds[1:], run.work[1:]))  # a CPU clock misses it
    # Every honest measurement spans its call's hold and work, on both sides' clocks.
    for sample, span, hold, work in zip([run.first, *run.warm], run.spans, run.holds, run.work):
        assert sample >= hold + timing.SYNC_FRACTION * work and span >= hold + timing.SYNC_FRACTION * work


def test_every_run_draws_its_own_lengths():
    plans = [timing.plan(6, random.Random(seed)) for seed in range(2)]
    assert plans[0] != plans[1]
    for work, hold in plans:
        warm = sorted(work[1:])
        assert warm[-1] / warm[0] > timing.WARM_WORK_SPREAD / 3  # short and long calls in every run
        assert len(set(work)) == len(work)


def test_a_result_that_is_not_a_pair_of_timings_is_a_clear_failure():
    with pytest.raises(AssertionError, match="should return"):
        timing.run_timer(lambda fn, *args, warm_calls=7: "fast", 2)


# --- a busy machine is told apart from a wrong timer by what this side saw --------------------

def _run(samples, spans, work, holds):
    """A TimerRun as this side records it: the timer's samples, and its own spans of the same calls."""
    return timing.TimerRun(samples[0], samples[1:], len(samples), work, holds, spans)


WORK = [0.25, 0.040, 0.008, 0.030, 0.012, 0.048, 0.018]  # the first call, then a shuffled warm ladder
HOLDS = [0.06, 0.09, 0.05, 0.07, 0.08, 0.055, 0.065]     # unrelated to each call's work


def _honest(stalls):
    """Every call timed with a wall clock around its hold, its work and whatever stalled it."""
    samples = [h + w + s for h, w, s in zip(HOLDS, WORK, stalls)]
    return _run(samples, [t + 0.001 for t in samples], WORK, HOLDS)


def test_short_calls_stalled_by_another_process_decide_nothing():
    # A burst of other processes lands on the three short calls: the samples hardly grow with the
    # work, but this side saw the same calls not grow either, while tasks waited for a CPU, so the
    # run says nothing of the timer.
    stalls = [0, 0, 0.045, 0, 0.045, 0, 0.045]
    verdict = timing.synchronization_problems(_honest(stalls))
    assert verdict.problems and not verdict.decided
    assert timing.synchronization_problems(_honest([0] * 7)) == timing.Verdict()
    # One short call stalled past a longer one is not the timer's mistake either.
    assert timing.synchronization_problems(_honest([0, 0, 0.03, 0, 0, 0, 0])) == timing.Verdict()


def test_work_that_ran_short_of_its_calibration_decides_nothing():
    # Calibrated at a busy moment, every call's work ran at 40% of its planned length: honest
    # samples grow with it no more than the calls did, which this side saw.
    samples = [h + 0.4 * w for h, w in zip(HOLDS, WORK)]
    run = _run(samples, [t + 0.001 for t in samples], WORK, HOLDS)
    verdict = timing.synchronization_problems(run)
    assert verdict.problems and not verdict.decided


def test_samples_out_of_their_calls_order_never_pass():
    # The samples sorted, as for a percentile: each is some call's, but not the one it stands for.
    honest = _honest([0] * 7)
    run = _run([honest.first, *sorted(honest.warm)], honest.spans, WORK, HOLDS)
    assert timing.confirmed_problems(timing.synchronization_problems, lambda: run)


def test_a_call_stalled_on_its_way_to_this_side_is_not_the_timers_mistake():
    # A stall between the timer's clock read and the call reaching this side lengthens the
    # sample, while this side's clock puts it in the span of the call before.
    honest = _honest([0] * 7)
    samples, spans = [honest.first, *honest.warm], list(honest.spans)
    samples[2] += 0.03  # the 8 ms call, measured longer than the 48 ms one
    spans[1] += 0.03
    assert timing.synchronization_problems(_run(samples, spans, WORK, HOLDS)) == timing.Verdict()


def test_a_warm_call_stalled_as_long_as_the_first_decides_nothing():
    stalls = [0, 0, 0, 0.7, 0, 0, 0]
    verdict = timing.first_call_problems(_honest(stalls), 6)
    assert verdict.problems and not verdict.decided
    honest = _honest([0] * 7)
    mixed_up = _run([honest.first, honest.first, *honest.warm[1:]], honest.spans, WORK, HOLDS)
    assert timing.first_call_problems(mixed_up, 6).decided  # this side saw that call short


def test_samples_that_do_not_follow_calls_this_side_saw_follow_their_work_fail():
    # Each sample covers its call's hold but carries the mean work, not its own: long enough, but
    # flat where this side saw the calls grow.
    honest = _honest([0] * 7)
    mean = statistics.mean(WORK[1:])
    flat = _run([honest.first, *[h + mean for h in HOLDS[1:]]], honest.spans, WORK, HOLDS)
    verdict = timing.synchronization_problems(flat)
    assert verdict.decided and "do not follow" in verdict.problems[0]


def test_samples_that_follow_the_work_but_are_not_their_calls_lengths_never_pass():
    # A timer that waits for every call and reports their mean, on a run whose holds happened to
    # make the mean less each hold follow the work: only this side's spans of the calls tell.
    length = 0.12
    holds = [HOLDS[0]] + [length - w for w in WORK[1:]]
    jitter = [0, 0.004, -0.006, 0.011, -0.002, 0.008, -0.009]  # the calls this side saw differ
    spans = [h + w + j for h, w, j in zip(holds, WORK, jitter)]
    averaged = _run([spans[0], *[statistics.mean(spans[1:])] * 6], spans, WORK, holds)
    verdict = timing.synchronization_problems(averaged)
    assert verdict.problems and "own calls' lengths" in verdict.problems[0] and not verdict.decided
    made = []
    assert timing.confirmed_problems(timing.synchronization_problems, lambda: made.append(1) or averaged)
    assert len(made) == timing.RUNS
    # The same calls timed each on its own, a few ms off this side's spans, as on a loaded machine.
    honest = _run([spans[0], *[s - 0.001 + 0.002 * (k % 2) for k, s in enumerate(spans[1:])]], spans, WORK, holds)
    assert timing.synchronization_problems(honest) == timing.Verdict()


def test_work_between_calls_however_long_is_not_in_the_samples():
    # gc.collect() between timed calls (20-240 ms here with JAX loaded, a red-team pass found) lies
    # in this side's span of the call before, never in a sample: an honest timer, judged on its own
    # calls, whatever that work costs each time.
    spans = [h + w + g for h, w, g in zip(HOLDS, WORK, [0.03, 0.24, 0.02, 0.11, 0.05, 0.19, 0.001])]
    samples = [h + w for h, w in zip(HOLDS, WORK)]
    assert timing.synchronization_problems(_run(samples, spans, WORK, HOLDS)) == timing.Verdict()


def test_the_holds_are_a_ladder_that_says_nothing_of_the_work():
    # A hold that depended on its call's work (a version made each call's whole length a ladder
    # and held what the work left of it) told a timer that never waits each call's work, from how
    # long the call took to return: report a constant less twice that, sleep to match, and pass.
    rng, low, high = random.Random(7), *timing.HOLD_FACTOR
    pairs = []
    for _ in range(2000):
        work, hold = timing.plan(6, rng)
        longest = max(work[1:])
        assert min(hold) >= longest * low * (1 - 1e-9)  # a CPU clock misses every hold
        for k, h in enumerate(sorted(hold[1:])):  # one hold on each rung
            assert longest * (low + (high - low) * k / 6) <= h <= longest * (low + (high - low) * (k + 1) / 6)
        pairs += [(w / longest, h / longest) for w, h in zip(work[1:], hold[1:])]
    assert abs(statistics.correlation(*zip(*pairs))) < 0.05


def test_a_busy_run_is_run_again_and_a_wrong_timer_still_fails_every_time():
    stalled = _honest([0, 0, 0.045, 0, 0.045, 0, 0.045])
    runs = iter([stalled, stalled, _honest([0] * 7)])
    assert timing.confirmed_problems(timing.synchronization_problems, lambda: next(runs)) == []
    honest = _honest([0] * 7)
    flat = _run([honest.first, *[h + statistics.mean(WORK[1:]) for h in HOLDS[1:]]], honest.spans, WORK, HOLDS)
    made = []
    problems = timing.confirmed_problems(timing.synchronization_problems, lambda: made.append(1) or flat)
    assert problems and len(made) == 2  # two failures the timer explains end it
    made.clear()
    problems = timing.confirmed_problems(timing.synchronization_problems, lambda: made.append(1) or stalled)
    assert problems and len(made) == timing.RUNS  # never a quiet run: no pass


# --- the timer is written once: later lessons give performance-01's ---------------------------

def _code_cell(lesson: str, grade_id: str):
    from conftest import ROOT
    from perfcourse.course import read_notebook

    nb = read_notebook(ROOT / "source" / lesson / f"{lesson}.ipynb")
    [cell] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return cell


def _function_source(source: str, name: str) -> str:
    import ast

    [found] = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name == name]
    return ast.unparse(found)


@pytest.mark.parametrize("lesson", ["performance-04", "performance-05", "performance-07"])
def test_a_later_lesson_gives_performance_01s_timer_in_a_locked_cell(lesson):
    """The lesson asks for no timer: its timer is a locked given cell (restored at grading) holding
    performance-01's solution, and no solution or grade cell asks for or checks a timer
    (performance-04's measure still reads a clock around its compile span, the lesson's own skill,
    and times its runs with the given timer)."""
    from conftest import ROOT
    from perfcourse.course import read_notebook

    written = _code_cell("performance-01", "timer").source
    written = "\n".join(line for line in written.splitlines() if "### " not in line)  # the solution markers
    given = _code_cell(lesson, "course_timer")
    meta = given.metadata["nbgrader"]
    assert meta["locked"] and not meta["solution"] and not meta["grade"]
    assert _function_source(given.source, "time_completed") == _function_source(written, "time_completed")
    cells = read_notebook(ROOT / "source" / lesson / f"{lesson}.ipynb").cells
    for cell in cells:
        nbgrader = cell.metadata.get("nbgrader", {})
        if nbgrader.get("solution"):
            assert "block_until_ready" not in cell.source
            if nbgrader["grade_id"] == "measure":
                assert "time_completed(compiled" in cell.source
            else:
                assert "perf_counter" not in cell.source
        if nbgrader.get("grade"):
            assert "timing.check_" not in cell.source
    [heading] = [c.source for c in cells if c.cell_type == "markdown" and "## The course's timer" in c.source]
    assert "performance-01" in heading and "Nothing to write in this cell" in heading


# --- throughput: calls queued back to back, one wait at the end (performance-01, Task 3) -------

def queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    outs = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / calls


def queued_cpu_clock(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    start = time.process_time()
    outs = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(outs)
    return (time.process_time() - start) / calls


def _queued_run(work, holds, *, gaps=0.001, wait_each=False, wait_first=True, start_before_first=False,
                end_before_wait=False, never_waits=False, made=None, asked_for=None):
    """A QueuedRun as this side would record a timer on chained calls of this work and these holds
    (whose actual work took exactly its calibrated length): each call asks `gaps` after the last
    one's answer (or after its result, when the timer waits for each)."""
    n = len(work) - 1
    asked, answered, ready, now = [], [], [], 0.0
    for k in range(len(work)):
        asked.append(now)
        answered.append(now + holds[k])
        ready.append(max(answered[k], ready[-1] if ready else 0.0) + work[k])
        waits = (k == 0 and wait_first) or (k > 0 and wait_each)
        now = (ready[k] if waits else answered[k]) + gaps
        if k == 0:
            start = asked[0] - 0.0005 if start_before_first else now - gaps / 2
    end = answered[-1] + gaps if end_before_wait or never_waits else ready[-1] + gaps
    returned = end + gaps if never_waits else max(end, ready[-1]) + gaps
    seconds = (end - start) / n
    # The instrument's word: each call made after the previous result was ready, and the last at the return.
    previous_ready = [True] + [asked[k] >= ready[k - 1] for k in range(1, len(work))]
    return timing.QueuedRun(seconds, asked_for or n, list(work), asked[:made], answered[:made], returned,
                            previous_ready[:made], returned >= ready[-1])


Q_WORK = [0.30, 0.08, 0.05, 0.12, 0.06, 0.10]   # the first call, then a shuffled ladder
Q_HOLDS = [0.1, 0.55, 0.001, 0.003, 0.002, 0.001]  # the first queued call's: longer than all the work


def test_the_queued_plan_holds_the_first_queued_call_longer_than_all_the_work():
    for seed in range(5):
        work, holds = timing.plan_queued(5, random.Random(seed))
        assert len(work) == len(holds) == 6 and work[0] >= timing.QUEUED_FIRST[0] * max(work[1:])
        assert holds[1] >= timing.QUEUED_PAUSE[0] * sum(work[1:])  # a CPU clock misses it
        assert max(holds[2:]) <= timing.QUEUED_HOLD[1] < timing.SYNC_FRACTION * min(work[1:])
        assert max(work[1:]) / min(work[1:]) > 1.5 and len(set(work)) == len(work)


def test_an_honest_queued_timer_passes_whatever_the_host_costs_between_calls():
    for gaps in (0.0002, 0.002, 0.008):
        assert timing.queued_problems(_queued_run(Q_WORK, Q_HOLDS, gaps=gaps)) == timing.Verdict()


@pytest.mark.parametrize("mistake, message, decided", [
    (dict(wait_each=True), "that times latency", False),   # ready before every call: run again, every run
    (dict(end_before_wait=True), "not complete when the clock was read", False),  # by the calibration only
    (dict(never_waits=True), "not complete when the clock was read", True),
    (dict(start_before_first=True), "includes the first call", True),  # the first call's hold counted
    (dict(wait_first=False), "includes the first call", True),
    (dict(made=4), "called fn 4 time", True),
])
def test_each_queued_mistake_fails_with_its_own_reason(mistake, message, decided):
    verdict = timing.queued_problems(_queued_run(Q_WORK, Q_HOLDS, **mistake))
    assert verdict.problems and message in verdict.problems[0]
    assert verdict.decided == decided


def test_work_faster_than_its_calibration_costs_an_honest_timer_a_rerun_never_the_cell():
    """A calibration taken at a busy moment: the work ran in a fifth of its calibrated time. The
    honest timer misses what the calibration predicts, not what holds on any machine."""
    fast = _queued_run([w / 5 for w in Q_WORK], Q_HOLDS)
    verdict = timing.queued_problems(dataclasses.replace(fast, work=list(Q_WORK)))
    assert verdict.problems and not verdict.decided


def test_the_instruments_word_fails_a_run_whose_times_a_stall_made_look_right():
    """A first call not waited for, or no wait at the end, in a run where the process stalled long enough
    for the times to pass: the instrument saw the result not ready when the next call was made, or when
    the timer returned."""
    honest = _queued_run(Q_WORK, Q_HOLDS)
    unready_first = dataclasses.replace(honest, ready=[True, False] + honest.ready[2:])
    assert "includes the first call" in timing.queued_problems(unready_first).problems[0]
    unready_last = dataclasses.replace(honest, last_ready=False)
    assert "not complete when the clock was read" in timing.queued_problems(unready_last).problems[0]
    queued = dataclasses.replace(honest, ready=[True, True] + [False] * (len(honest.ready) - 2))
    assert timing.queued_problems(queued) == timing.Verdict()  # later results pending: that is queuing


def test_a_reported_time_that_is_not_per_call_fails():
    honest = _queued_run(Q_WORK, Q_HOLDS)
    total = dataclasses.replace(honest, seconds=honest.seconds * honest.asked_for)
    verdict = timing.queued_problems(total)  # longer than the timer's whole run after the first call
    assert verdict.decided and "includes the first call" in verdict.problems[0]
    tenth = dataclasses.replace(honest, seconds=honest.seconds / 10)
    assert "not complete" in timing.queued_problems(tenth).problems[0] and timing.queued_problems(tenth).decided


@pytest.mark.slow
def test_the_queued_instrument_runs_its_calls_in_dispatch_order():
    """Each call's work starts once the previous call's result is ready, so a long first call holds
    up the short calls queued after it: the last result is ready only after the first call's work.

    Judged by the clock, not by `is_ready()` on the earlier results: the CPU client may mark a result
    ready a moment after the call that consumes it has started (CI saw the first result not yet
    "ready" once the third was, on a loaded 2-core machine), and the order is what the check needs."""
    from perfcourse.kernel.probes import timing as instrument

    # The program reads the previous result (a NaN there reaches its own), so no runtime may start
    # it before that result exists; XLA keeps a float times zero.
    _, matrix = instrument._unit()
    previous = np.full((2, 2), np.nan, np.float32)
    assert np.isnan(np.asarray(instrument._CHAINED(np.int32(1), matrix, previous))).all()
    assert (np.asarray(instrument._CHAINED(np.int32(1), matrix, np.ones((2, 2), np.float32))) == 1).all()
    calibration = timing.calibrate()
    long, short = calibration.iterations(0.3), calibration.iterations(0.001)
    fn = instrument.queued_instrument(timing.Schedule([long, short, short], [0, 0, 0]))
    started = time.perf_counter()
    outs = [fn() for _ in range(3)]
    outs[-1].block_until_ready()
    last_ready = time.perf_counter() - started
    # Side by side, the short calls would be done in milliseconds; in order, not before the long
    # one's work (0.3 s by the calibration; a sixth of it leaves room for a calibration made under
    # more load than the run).
    assert last_ready > 0.05, f"the last of three queued calls was ready after {last_ready:.3f} s"


# The latency method and the clock read before the wait fail only after QUEUED_RUNS runs (6 s): the
# recorded runs above prove them, and the graded samples prove the latency method on the instrument.
@pytest.mark.slow
@pytest.mark.parametrize("timer", [queued, queued_cpu_clock], ids=lambda t: t.__name__)
def test_queued_timers_on_the_real_instrument(timer):
    if timer is queued:
        timing.check_queued(timer)
    else:
        with pytest.raises(timing.CheckFailed):
            timing.check_queued(timer)
