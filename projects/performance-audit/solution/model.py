"""performance-audit, the reference: the workload, its trace counter, a synchronized timer and the report.

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


def time_first_and_steady(fn, *args, steady_calls=7):
    """(first_call_seconds, steady_seconds): every measurement ends after its result is ready."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first_call_seconds = time.perf_counter() - start

    steady_seconds = []
    for _ in range(steady_calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        steady_seconds.append(time.perf_counter() - start)
    return first_call_seconds, steady_seconds


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
