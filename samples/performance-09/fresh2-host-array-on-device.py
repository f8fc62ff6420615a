# Makes the "host" array with jax.numpy: it is already on the device, so each put copies nothing across
# the link (the text: a host array, NumPy).
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=0 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace transfer_sweep
def transfer_sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=time_call):
    rows = []
    for size in sizes:
        host = jnp.ones(size // 4, jnp.float32)
        puts = [timer(put, host) for _ in range(repeats)]
        gets = []
        for _ in range(repeats):
            device = put(host)
            jax.block_until_ready(device)
            gets.append(timer(get, device))
        rows.append({"bytes": size, "put_seconds": float(np.median(puts)), "get_seconds": float(np.median(gets))})
    return rows
