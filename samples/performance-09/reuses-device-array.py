# Puts each size once and times every get on that same device array: after the first get JAX hands
# back the host copy it kept, so the later "transfers" move nothing and the median is a cache
# lookup. Passes the public checks (their instruments do not cache). Loses the sweep points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=0 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# %% solutions
# %% replace transfer_sweep
def transfer_sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=time_call):
    rows = []
    for size in sizes:
        host = np.ones(int(size) // 4, np.float32)
        puts = [timer(put, host) for _ in range(repeats)]
        device = jax.block_until_ready(put(host))
        gets = [timer(get, device) for _ in range(repeats)]
        rows.append({"bytes": int(size), "put_seconds": float(np.median(puts)), "get_seconds": float(np.median(gets))})
    return rows
