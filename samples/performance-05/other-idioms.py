# Correct in other idioms: the listing read from redirect_stdout's own StringIO through
# jax.ad_checkpoint, a jitted checkpoint built with functools.partial and an explicit
# nothing-saveable policy, the timings compared with a median and a range written out over sorted
# samples (the verdict read from a sign), and the backward pass as two lax.scan loops in jax.numpy.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace residual_inspection
import contextlib
import io

import jax.ad_checkpoint


def saved_residual_descriptions(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()) as listing:
        jax.ad_checkpoint.print_saved_residuals(fn, *args)
    return [line.rstrip() for line in listing.getvalue().splitlines()]
# %% replace remat_layer
import functools

remat_layer = jax.jit(functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable)(layer))
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    def median(samples):
        ordered = sorted(samples)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2

    def value_range(samples):
        low, *_, high = sorted(samples)
        return high - low

    ordinary_median, remat_median = median(ordinary_seconds), median(remat_seconds)
    difference = remat_median - ordinary_median
    spread = max(map(value_range, (ordinary_seconds, remat_seconds)))
    verdicts = {1: "remat slower", -1: "remat faster", 0: "within the spread"}
    beyond = (difference > spread) - (-difference > spread)
    return {"ordinary_median": ordinary_median, "remat_median": remat_median, "difference": difference,
            "spread": spread, "verdict": verdicts[beyond]}
# %% replace reverse_recurrence
from jax import lax


def reverse_recurrence(v, weight, depth):
    weight = jnp.asarray(weight)

    def forward(h, _):
        h = jnp.tanh(weight @ h)
        return h, h

    last, stacked = lax.scan(forward, jnp.asarray(v), None, length=depth)

    def backward(g, h):
        return weight.T @ ((1 - h * h) * g), None

    g, _ = lax.scan(backward, 2 * last, stacked, reverse=True)
    return g
