# Hands np.polyfit weights 1 / seconds**2, reading "weights 1 / seconds**2 on the squared errors" as
# polyfit's w: polyfit squares w with the error, so this weighs them by 1 / seconds**4. Loses the fit's
# points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=0 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace transfer_fit
def fit_transfer(nbytes, seconds):
    x = np.asarray(nbytes, dtype=np.float64)
    y = np.asarray(seconds, dtype=np.float64)
    slope, intercept = np.polyfit(x, y, 1, w=1.0 / y**2)
    return {"fixed_seconds": float(intercept), "bytes_per_second": float(1.0 / slope)}
