# A different correct approach: jax.checkpoint as a decorator, stdout captured by swapping
# sys.stdout, a nanosecond clock with the result's own block_until_ready, and the backward pass
# in jax.numpy with tanh' = (1 + t)(1 - t).
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timer_first_call_apart=1 test_timer_synchronized=3 test_reverse_recurrence=3 test_recurrence_by_hand=1
# %% replace residual_inspection
import io
import sys


def saved_residual_descriptions(fn, *args):
    real_stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        print_saved_residuals(fn, *args)
        text = sys.stdout.getvalue()
    finally:
        sys.stdout = real_stdout
    return [line for line in text.split("\n") if line.strip()]
# %% replace remat_layer
@jax.checkpoint
def remat_layer(v):
    return layer(v)
# %% replace timer
from time import perf_counter_ns


def time_gradient(fn, *args, warm_calls=5):
    def once():
        begin = perf_counter_ns()
        fn(*args).block_until_ready()
        return (perf_counter_ns() - begin) / 1e9

    first = once()
    return first, [once() for _ in range(warm_calls)]
# %% replace reverse_recurrence
def reverse_recurrence(v, weight, depth):
    weight = jnp.asarray(weight)
    h = jnp.asarray(v)
    outputs = []
    for _ in range(depth):
        h = jnp.tanh(weight @ h)
        outputs.append(h)
    g = 2.0 * h
    for t in outputs[::-1]:
        g = (g * (1 + t) * (1 - t)) @ weight  # a row vector times W is W.T times a column
    return g
