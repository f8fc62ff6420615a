"""performance-audit: the workload, its trace counter, a reading of the timings and the report.

The timer is given (performance-01's). Write the three functions that raise NotImplementedError,
then run the checks from the repository root:

    python3 projects/performance-audit/tests/check.py --implementation starter --stage 1

Each stage prints a line beginning `PASS performance-audit stage N`, or `FAIL ...` with what to change.
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
    """tanh of the matrix product a @ b, for any compatible shapes, compiled with jax.jit.

    Also add 1 to the module's TRACE_COUNT here (declare `global TRACE_COUNT` first). A plain
    Python statement in this body runs while JAX traces the function, never when the compiled
    program runs, so the counter counts traces, not calls.
    """
    raise NotImplementedError(
        "write workload(a, b) in projects/performance-audit/starter/model.py: add 1 to the global "
        "TRACE_COUNT, then return jnp.tanh(a @ b)")


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
    """What the timings show about the first call: return a dict with

      steady_median_seconds   the median of steady_seconds (statistics.median)
      steady_middle_half_seconds
                              the steady calls' middle half: [25th, 75th] percentile, as
                              np.percentile(steady_seconds, [25, 75]) computes them
      one_time_seconds        first_call_seconds minus the steady median: what the first call cost
                              on top of a steady call (negative when it was faster)
      one_time_fraction       one_time_seconds / first_call_seconds
      one_time_is_real        True when first_call_seconds is strictly above the steady 75th
                              percentile

    The course's rule for comparing timings (performance-01): a set is slower than another only when
    its middle half lies wholly above the other's, and a single timing is its own middle half. A
    first call above the steady middle half shows a one-time cost (tracing and compiling); one
    merely above the median, or on the 75th percentile, does not.
    """
    raise NotImplementedError(
        "write first_call_evidence(first_call_seconds, steady_seconds) in "
        "projects/performance-audit/starter/model.py: return the steady median and middle half, the "
        "one-time cost (first call minus median), its fraction of the first call, and one_time_is_real "
        "(the first call strictly above the steady 75th percentile)")


def build_report(measurements):
    """The audit's report, a dict that json.dumps can write.

    `measurements` is a dict of what the checks measured with your functions: first_call_seconds,
    steady_seconds, trace_count, the shapes and dtype, the measurement boundary and the name of
    the JAXPR file. Return every entry unchanged, plus:
      steady_median_seconds   the median of steady_seconds (statistics.median)
      backend                 jax.default_backend()
      jax, jaxlib, numpy      the versions (jax.__version__, jaxlib.__version__, np.__version__)
      python                  platform.python_version()
      memory_measured         False: say explicitly what this audit does not measure
    """
    raise NotImplementedError(
        "write build_report(measurements) in projects/performance-audit/starter/model.py: return the "
        "measurements plus steady_median_seconds, backend, jax, jaxlib, numpy, python and "
        "\"memory_measured\": False")
