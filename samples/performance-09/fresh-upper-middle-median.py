# Takes the upper of the two middle times as the median of an even count: the task asks for the mean of
# the two (np.median). Loses the sweep's points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=0 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace transfer_sweep
def transfer_sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=time_call):
    rows = []
    for size in sizes:
        host = np.zeros(size // 4, dtype=np.float32)
        puts = [timer(put, host) for _ in range(repeats)]
        gets = []
        for _ in range(repeats):
            fresh = jax.block_until_ready(put(host))
            gets.append(timer(get, fresh))
        middle = repeats // 2
        rows.append({"bytes": size, "put_seconds": sorted(puts)[middle], "get_seconds": sorted(gets)[middle]})
    return rows
