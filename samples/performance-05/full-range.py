# Medians and middle halves all right, but the verdict compares the medians' difference with the
# full range (slowest minus fastest) instead of comparing the middle halves: one slow ordinary call
# stretches the range until a clear slowdown reads "within the spread" (the public check's third
# case). Loses the timing comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    ordinary_median, remat_median = float(np.median(ordinary_seconds)), float(np.median(remat_seconds))
    difference = remat_median - ordinary_median
    spread = max(np.ptp(ordinary_seconds), np.ptp(remat_seconds))
    if difference > spread:
        verdict = "remat slower"
    elif -difference > spread:
        verdict = "remat faster"
    else:
        verdict = "within the spread"
    return {"ordinary_median": ordinary_median, "remat_median": remat_median,
            "ordinary_middle_half": list(np.percentile(ordinary_seconds, [25, 75])),
            "remat_middle_half": list(np.percentile(remat_seconds, [25, 75])), "verdict": verdict}
