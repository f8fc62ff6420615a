# Correct in other idioms: the listing read from redirect_stdout's own StringIO through
# jax.ad_checkpoint, a jitted checkpoint built with functools.partial and an explicit
# nothing-saveable policy, the timings compared with a median and linear percentiles written out over
# sorted samples (the verdict read from a sign), and the backward pass as two lax.scan loops in jax.numpy.
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
    def percentile(samples, q):  # linear, as NumPy's default: between the sorted neighbours
        ordered = sorted(samples)
        at = q / 100 * (len(ordered) - 1)
        below = int(at)
        above = min(below + 1, len(ordered) - 1)
        return ordered[below] + (ordered[above] - ordered[below]) * (at - below)

    def middle_half(samples):
        return [percentile(samples, 25), percentile(samples, 75)]

    ordinary_half, remat_half = middle_half(ordinary_seconds), middle_half(remat_seconds)
    verdicts = {1: "remat slower", -1: "remat faster", 0: "within the spread"}
    side = (remat_half[0] > ordinary_half[1]) - (remat_half[1] < ordinary_half[0])
    return {"ordinary_median": percentile(ordinary_seconds, 50), "remat_median": percentile(remat_seconds, 50),
            "ordinary_middle_half": ordinary_half, "remat_middle_half": remat_half, "verdict": verdicts[side]}
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
