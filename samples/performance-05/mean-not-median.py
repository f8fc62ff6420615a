# Compares the two gradients' mean times instead of their medians: one slow call drags a mean (and
# the difference, and perhaps the verdict) along with it, which is why the lesson asks for medians.
# Everything else is right, so it loses the timing comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    import statistics

    ordinary_median = statistics.mean(ordinary_seconds)
    remat_median = statistics.mean(remat_seconds)
    difference = remat_median - ordinary_median
    spread = max(max(ordinary_seconds) - min(ordinary_seconds), max(remat_seconds) - min(remat_seconds))
    if difference > spread:
        verdict = "remat slower"
    elif -difference > spread:
        verdict = "remat faster"
    else:
        verdict = "within the spread"
    return {"ordinary_median": ordinary_median, "remat_median": remat_median, "difference": difference,
            "spread": spread, "verdict": verdict}
