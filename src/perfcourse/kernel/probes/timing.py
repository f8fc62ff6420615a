"""The timing instrument, built in the student's process: a real jitted function whose calls last
as long as the trusted side decides, and whose result becomes ready only after an amount of device
work the trusted side picks for every call.

The work is a loop on the device (`lax.fori_loop`) whose trip count is an argument, next to a
small matrix product: XLA's CPU client then dispatches the program asynchronously, as an
accelerator would, so the call returns before its result is ready. Each call first asks the
trusted side's `schedule` how many iterations it runs; the trusted side records the call and
holds its answer for a time it never tells (checks/timing.py). The program is compiled before
the function is handed over, so no call's length includes compiling it.
"""
from __future__ import annotations

import functools

PROBES = ("run_timer", "spin")
MATRIX = 256


@functools.lru_cache(maxsize=None)
def _unit():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def unit(iterations, matrix):
        spun = jax.lax.fori_loop(0, iterations, lambda i, c: c * jnp.float32(0.9999999) + 1.0, jnp.float32(0))
        # Ready only after the loop and the product, but the same value for every trip count (XLA
        # keeps a float times zero): a result that grew with the work would tell a timer how much
        # work each call had without its waiting for it.
        return (matrix @ matrix)[:2, :2] * 0 + (spun * 0 + 1)

    return unit, jnp.ones((MATRIX, MATRIX), jnp.float32)


def spin(iterations: int):
    """One call of the unit, dispatched; the caller synchronizes (used to calibrate)."""
    import jax.numpy as jnp

    unit, matrix = _unit()
    return unit(jnp.int32(iterations), matrix)


def instrument(schedule):
    """The function handed to the student's timer: each call runs the work its schedule says."""
    import jax
    import jax.numpy as jnp

    unit, matrix = _unit()
    jax.block_until_ready(unit(jnp.int32(1), matrix))  # compiled now, not in the first call

    def timed_function(*args, **kwargs):
        return unit(jnp.int32(schedule.next_call()), matrix)

    return timed_function


def run_timer(timer, schedule, calls_keyword: str, warm_calls: int):
    """The student's timer, run on the instrument with two small arrays as its arguments."""
    import jax.numpy as jnp

    fn = instrument(schedule)
    return timer(fn, jnp.ones((4, 3), jnp.float32), jnp.ones((3, 2), jnp.float32), **{calls_keyword: warm_calls})
