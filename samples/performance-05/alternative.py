# A different correct approach: jax.checkpoint as a decorator, stdout captured by swapping
# sys.stdout, the timings compared with statistics.quantiles(method="inclusive") (the same linear
# quartiles as NumPy's) and one comparison per side, and the backward pass in jax.numpy with tanh' = (1 + t)(1 - t).
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
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
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    import statistics

    halves = {}
    for name, samples in (("ordinary", ordinary_seconds), ("remat", remat_seconds)):
        low, _, high = statistics.quantiles(samples, n=4, method="inclusive")
        halves[name] = (low, high)
    verdict = "within the spread"
    if halves["remat"][0] > halves["ordinary"][1]:
        verdict = "remat slower"
    if halves["remat"][1] < halves["ordinary"][0]:
        verdict = "remat faster"
    return dict(ordinary_median=statistics.median(ordinary_seconds), remat_median=statistics.median(remat_seconds),
                ordinary_middle_half=halves["ordinary"], remat_middle_half=halves["remat"], verdict=verdict)
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
