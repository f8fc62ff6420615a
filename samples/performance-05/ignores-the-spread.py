# Medians, difference and spread all right, but the verdict reads only the sign of the difference:
# two medians always differ a little, so it names a winner even where the difference is far inside
# the spread. Loses the timing comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    import statistics

    ordinary_median = statistics.median(ordinary_seconds)
    remat_median = statistics.median(remat_seconds)
    difference = remat_median - ordinary_median
    spread = max(max(ordinary_seconds) - min(ordinary_seconds), max(remat_seconds) - min(remat_seconds))
    verdict = "remat slower" if difference > 0 else "remat faster"
    return {"ordinary_median": ordinary_median, "remat_median": remat_median, "difference": difference,
            "spread": spread, "verdict": verdict}
