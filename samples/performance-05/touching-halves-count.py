# Medians and middle halves all right, but middle halves that only touch (the remat 25th percentile
# equal to the ordinary 75th) already count as a change: the lesson's comparisons are strict, so
# touching middle halves are "within the spread". The public cases never land on that edge. Loses
# the timing comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    ordinary_half, remat_half = np.percentile(ordinary_seconds, [25, 75]), np.percentile(remat_seconds, [25, 75])
    if remat_half[0] >= ordinary_half[1]:
        verdict = "remat slower"
    elif remat_half[1] <= ordinary_half[0]:
        verdict = "remat faster"
    else:
        verdict = "within the spread"
    return {"ordinary_median": float(np.median(ordinary_seconds)), "remat_median": float(np.median(remat_seconds)),
            "ordinary_middle_half": ordinary_half.tolist(), "remat_middle_half": remat_half.tolist(),
            "verdict": verdict}
