# Fits the line by plain least squares in seconds: the largest transfers, whose seconds are the
# largest, decide it, and one slow 4 MiB transfer moves the fixed cost far from every small
# median. Loses the fit points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=0 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace transfer_fit
def fit_transfer(nbytes, seconds):
    slope, intercept = np.polyfit(np.asarray(nbytes, np.float64), np.asarray(seconds, np.float64), 1)
    return {"fixed_seconds": float(intercept), "bytes_per_second": float(1.0 / slope)}
