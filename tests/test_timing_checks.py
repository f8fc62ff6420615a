"""The scripted clock behind performance-01's hidden timer tests: right methods pass, wrong ones fail."""
import time
import timeit

import jax
import numpy as np
import pytest

from perfcourse.checks.timing import (COMPILE_SECONDS, DISPATCH_SECONDS, WORK_SECONDS, close,
                                      run_timer, scripted_time, ScriptedDevice)

SYNCED_FIRST = COMPILE_SECONDS + DISPATCH_SECONDS + WORK_SECONDS
SYNCED_WARM = DISPATCH_SECONDS + WORK_SECONDS


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


def synchronized_too_late(fn, *args, warm_calls=7):
    """Reads the clock, then synchronizes: the wait is outside the measurement."""
    def once():
        start = time.perf_counter()
        out = fn(*args)
        elapsed = time.perf_counter() - start
        jax.block_until_ready(out)
        return elapsed
    return once(), [once() for _ in range(warm_calls)]


def through_numpy_and_timeit(fn, *args, warm_calls=7):
    """Synchronizes by converting to NumPy and reads timeit's default timer."""
    first = timeit.timeit(lambda: np.asarray(fn(*args)), number=1)
    return first, timeit.repeat(lambda: np.asarray(fn(*args)), number=1, repeat=warm_calls)


def first_call_among_warm(fn, *args, warm_calls=7):
    """Forgets to keep the first call apart: it becomes a warm sample."""
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return min(samples), samples[:warm_calls]


from time import perf_counter_ns as imported_clock  # noqa: E402  (bound before the check patches time)


def imported_nanosecond_clock(fn, *args, warm_calls=7):
    def once():
        start = imported_clock()
        fn(*args).block_until_ready()
        return (imported_clock() - start) / 1e9
    return once(), [once() for _ in range(warm_calls)]


@pytest.mark.parametrize("timer", [synchronized, through_numpy_and_timeit, imported_nanosecond_clock])
def test_synchronized_timers_measure_the_completed_work(timer):
    run = run_timer(timer, 5)
    assert run.calls == 6 and not run.unsynchronized_measurements()
    assert close(run.first, SYNCED_FIRST)
    assert all(close(s, SYNCED_WARM) for s in run.warm)


@pytest.mark.parametrize("timer", [unsynchronized, synchronized_too_late])
def test_unsynchronized_timers_are_caught(timer):
    run = run_timer(timer, 5)
    assert run.unsynchronized_measurements() == [1, 2, 3, 4, 5, 6]
    assert close(run.first, COMPILE_SECONDS + DISPATCH_SECONDS)
    # ...but they do keep the first call apart, which is graded separately.
    assert run.first >= COMPILE_SECONDS and all(s < COMPILE_SECONDS for s in run.warm)


def test_first_call_mixed_into_warm_samples_is_caught():
    run = run_timer(first_call_among_warm, 4)
    kept_apart = run.first >= COMPILE_SECONDS and all(s < COMPILE_SECONDS for s in run.warm)
    assert not kept_apart


def test_clocks_are_restored_after_the_check():
    originals = (time.perf_counter, time.perf_counter_ns, time.monotonic, time.time,
                 timeit.default_timer, timeit.Timer.__init__.__defaults__, imported_clock)
    run_timer(imported_nanosecond_clock, 2)
    assert originals == (time.perf_counter, time.perf_counter_ns, time.monotonic, time.time,
                         timeit.default_timer, timeit.Timer.__init__.__defaults__, imported_clock)
    assert time.perf_counter() != time.perf_counter()  # the real clock moves again


def test_clocks_are_restored_when_the_timer_raises():
    def broken(fn, *args, warm_calls=7):
        raise RuntimeError("student bug")
    real = time.perf_counter
    with pytest.raises(RuntimeError):
        run_timer(broken, 3)
    assert time.perf_counter is real


def test_the_scripted_clock_only_moves_with_the_work():
    device = ScriptedDevice()
    with scripted_time(device):
        t0 = time.perf_counter()
        pending = device()
        t1 = time.perf_counter()
        pending.block_until_ready()
        pending.block_until_ready()  # waiting twice costs nothing more
        t2 = time.perf_counter()
    assert close(t1 - t0, COMPILE_SECONDS + DISPATCH_SECONDS) and close(t2 - t1, WORK_SECONDS)
