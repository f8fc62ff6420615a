# Medians, difference and spread all right, but a difference that only reaches the spread already
# counts as a change: the lesson's verdict needs the difference to exceed the spread, so medians
# apart by exactly the wider range are "within the spread". The public cases never land on that
# edge. Loses the timing comparison's points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace timing_verdict
def compare_timings(ordinary_seconds, remat_seconds):
    fast, slow = np.median(ordinary_seconds), np.median(remat_seconds)
    change = float(slow - fast)
    spread = float(max(np.ptp(ordinary_seconds), np.ptp(remat_seconds)))
    if change >= spread:
        verdict = "remat slower"
    elif change <= -spread:
        verdict = "remat faster"
    else:
        verdict = "within the spread"
    return {"ordinary_median": float(fast), "remat_median": float(slow), "difference": change,
            "spread": spread, "verdict": verdict}
