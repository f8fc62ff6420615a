# Correct in other idioms: the listing read from redirect_stdout's own StringIO through
# jax.ad_checkpoint, a jitted checkpoint built with functools.partial and an explicit
# nothing-saveable policy, a timer whose clock (time.monotonic) is a default argument and which
# waits on every leaf of the result, and the backward pass as two lax.scan loops in jax.numpy.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timer_first_call_apart=1 test_timer_synchronized=3 test_reverse_recurrence=3 test_recurrence_by_hand=1
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
# %% replace timer
import time


def time_gradient(fn, *args, warm_calls=5, clock=time.monotonic):
    def wait(out):
        return jax.tree_util.tree_map(lambda leaf: leaf.block_until_ready(), out)

    start = clock()
    wait(fn(*args))
    first = clock() - start
    samples = []
    while len(samples) < warm_calls:
        start = clock()
        wait(fn(*args))
        samples.append(clock() - start)
    return first, samples
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
