# Correct, in other idioms: the printed lines split from a StringIO kept by the with statement, the layer
# rematerialized through jax.remat with prevent_cse=False (the same residuals; only the barrier that keeps
# the compiler from merging the recomputation goes), np.quantile for the middle halves, and the backward
# pass as a NumPy loop over the kept layers in reverse.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% replace residual_inspection
import contextlib
import io


def saved_residual_descriptions(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        print_saved_residuals(fn, *args)
    return [line for line in printed.getvalue().split("\n") if line.strip()]
# %% replace remat_layer
remat_layer = jax.remat(layer, prevent_cse=False)
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    ordinary, remat = np.asarray(ordinary_seconds, float), np.asarray(remat_seconds, float)
    o_low, o_high = (float(q) for q in np.quantile(ordinary, [0.25, 0.75]))
    r_low, r_high = (float(q) for q in np.quantile(remat, [0.25, 0.75]))
    if r_low > o_high:
        verdict = "remat slower"
    elif r_high < o_low:
        verdict = "remat faster"
    else:
        verdict = "within the spread"
    return {"ordinary_median": float(np.median(ordinary)), "remat_median": float(np.median(remat)),
            "ordinary_middle_half": [o_low, o_high], "remat_middle_half": [r_low, r_high], "verdict": verdict}
# %% replace reverse_recurrence
def reverse_recurrence(v, weight, depth):
    weight = np.asarray(weight)
    kept = [np.asarray(v)]
    for _ in range(depth):
        kept.append(np.tanh(weight @ kept[-1]))
    grad = 2 * kept[-1]
    for h in reversed(kept[1:]):
        grad = weight.T @ ((1 - h * h) * grad)
    return grad
