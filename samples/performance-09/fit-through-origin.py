# Fits seconds = bytes / bandwidth, a line through the origin: no fixed cost, and a bandwidth
# bent to absorb it. Loses the fit points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=0 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace transfer_fit
def fit_transfer(nbytes, seconds):
    x, y = np.asarray(nbytes, np.float64), np.asarray(seconds, np.float64)
    per_byte = float((x * y).sum() / (x * x).sum())
    return {"fixed_seconds": 0.0, "bytes_per_second": 1.0 / per_byte}
