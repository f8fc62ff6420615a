# Medians and middle halves all right, but the verdict reads only the sign of the medians' difference:
# two medians always differ a little, so it names a winner even where the middle halves overlap.
# Loses the timing comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    ordinary_median, remat_median = float(np.median(ordinary_seconds)), float(np.median(remat_seconds))
    verdict = "remat slower" if remat_median > ordinary_median else "remat faster"
    return {"ordinary_median": ordinary_median, "remat_median": remat_median,
            "ordinary_middle_half": list(np.percentile(ordinary_seconds, [25, 75])),
            "remat_middle_half": list(np.percentile(remat_seconds, [25, 75])), "verdict": verdict}
