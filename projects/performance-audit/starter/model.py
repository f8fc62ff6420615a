"""performance-audit: the workload, its trace counter, a synchronized timer and the report.

Write the three functions that raise NotImplementedError, then run the checks from the
repository root:

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


def time_first_and_steady(fn, *args, steady_calls=7):
    """Time fn(*args): return (first_call_seconds, steady_seconds).

    first_call_seconds: the first call on its own, until its result is ready (it includes
        tracing and compilation when fn has not run at these shapes yet);
    steady_seconds: a list of `steady_calls` floats, one per further call, each until its result
        is ready.

    Read the clock with time.perf_counter(), and wait for every result with
    jax.block_until_ready(...) before reading the clock that ends its measurement.
    """
    raise NotImplementedError(
        "write time_first_and_steady(fn, *args, steady_calls=7) in "
        "projects/performance-audit/starter/model.py: time the first call apart, then steady_calls more "
        "calls, each with time.perf_counter() read after jax.block_until_ready(result); return "
        "(first_call_seconds, steady_seconds)")


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
