# Makes the fresh device array for each timed get with an untimed put but never waits for it:
# put returns before its copy is done, so the get's time holds what is left of the put. Passes the
# public checks (their instruments finish at once). Loses the sweep points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=0 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace transfer_sweep
def transfer_sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=time_call):
    rows = []
    for size in sizes:
        host = np.full(int(size) // 4, 0.5, np.float32)
        put_times = [timer(put, host) for _ in range(repeats)]
        get_times = []
        for _ in range(repeats):
            landing = put(host)
            get_times.append(timer(get, landing))
        rows.append({"bytes": int(size), "put_seconds": float(np.median(put_times)),
                     "get_seconds": float(np.median(get_times))})
    return rows
