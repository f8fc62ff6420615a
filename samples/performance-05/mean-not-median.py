# Reports the two gradients' mean times as their medians: one slow call drags a mean along with it,
# which is why the lesson asks for medians. The middle halves and their verdict are right, so it
# loses the timing comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    import statistics

    ordinary_low, ordinary_high = np.percentile(ordinary_seconds, [25, 75])
    remat_low, remat_high = np.percentile(remat_seconds, [25, 75])
    if remat_low > ordinary_high:
        verdict = "remat slower"
    elif remat_high < ordinary_low:
        verdict = "remat faster"
    else:
        verdict = "within the spread"
    return {"ordinary_median": statistics.mean(ordinary_seconds), "remat_median": statistics.mean(remat_seconds),
            "ordinary_middle_half": [ordinary_low, ordinary_high], "remat_middle_half": [remat_low, remat_high],
            "verdict": verdict}
