# Reads the quartiles as actual samples (np.percentile with method="nearest"), not NumPy's default linear
# interpolation that the rule names.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    o_low, o_high = np.percentile(ordinary_seconds, [25, 75], method="nearest")
    r_low, r_high = np.percentile(remat_seconds, [25, 75], method="nearest")
    verdict = ("remat slower" if r_low > o_high else "remat faster" if r_high < o_low else "within the spread")
    return {"ordinary_median": float(np.median(ordinary_seconds)), "remat_median": float(np.median(remat_seconds)),
            "ordinary_middle_half": [float(o_low), float(o_high)], "remat_middle_half": [float(r_low), float(r_high)],
            "verdict": verdict}
