# Medians and middle halves all right, but the verdict sets the remat median against the ordinary
# middle half: a remat median above the ordinary 75th percentile reads as "remat slower" even where
# the two middle halves still overlap (the public check's fourth case). Loses the timing
# comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    import statistics

    ordinary_low, ordinary_high = np.percentile(ordinary_seconds, [25, 75])
    remat_median = statistics.median(remat_seconds)
    if remat_median > ordinary_high:
        verdict = "remat slower"
    elif remat_median < ordinary_low:
        verdict = "remat faster"
    else:
        verdict = "within the spread"
    return {"ordinary_median": statistics.median(ordinary_seconds), "remat_median": remat_median,
            "ordinary_middle_half": [ordinary_low, ordinary_high],
            "remat_middle_half": list(np.percentile(remat_seconds, [25, 75])), "verdict": verdict}
