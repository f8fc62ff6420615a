"""performance-audit, the reference: the workload, its trace counter, a reading of the timings and the report.

    python3 projects/performance-audit/tests/check.py --implementation solution --stage 4
"""
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np

# How many times JAX has traced the Python body of `workload`. Tracing happens on the first call
# with new input shapes or dtypes; later calls with the same shapes run the compiled program.
TRACE_COUNT = 0


def trace_count() -> int:
    """The number of traces of `workload` so far."""
    return TRACE_COUNT


@jax.jit
def workload(a, b):
    """tanh of the matrix product a @ b, for any compatible shapes, compiled with jax.jit."""
    global TRACE_COUNT
    TRACE_COUNT += 1  # plain Python: runs while JAX traces, never when the compiled program runs
    return jnp.tanh(a @ b)


def time_completed(fn, *args, warm_calls=7):
    """performance-01's synchronized timer, given: (first_call_seconds, warm_samples_seconds), the
    first call on its own, then warm_calls more calls, each measured until its result is ready."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first_call_seconds = time.perf_counter() - start

    warm_samples_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        warm_samples_seconds.append(time.perf_counter() - start)
    return first_call_seconds, warm_samples_seconds


def time_first_and_steady(fn, *args, steady_calls=7):
    """The audit's name for the course's timer: (first_call_seconds, steady_seconds), the first call
    (tracing, compiling, running) kept apart from steady_calls synchronized steady calls. Given."""
    return time_completed(fn, *args, warm_calls=steady_calls)


def first_call_evidence(first_call_seconds, steady_seconds):
    """The first call's one-time cost, and whether the first call lies above the steady calls' middle half."""
    median = statistics.median(steady_seconds)
    low, high = np.percentile(steady_seconds, [25, 75])
    one_time = first_call_seconds - median
    return {
        "steady_median_seconds": median,
        "steady_middle_half_seconds": [float(low), float(high)],
        "one_time_seconds": one_time,
        "one_time_fraction": one_time / first_call_seconds,
        "one_time_is_real": bool(first_call_seconds > high),
    }


def build_report(measurements):
    """The measurements unchanged, their median, where and with what they ran, and what was not measured."""
    report = dict(measurements)
    report["steady_median_seconds"] = statistics.median(measurements["steady_seconds"])
    report["backend"] = jax.default_backend()
    report["jax"] = jax.__version__
    report["jaxlib"] = jaxlib.__version__
    report["numpy"] = np.__version__
    report["python"] = platform.python_version()
    report["memory_measured"] = False
    return report
