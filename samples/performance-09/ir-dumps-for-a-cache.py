# Mistakes files in the folder for a cache: the settings only tell JAX to write its IR there, so
# both processes compile and write the same dump files (the second adds no new name), and no
# persistent cache is ever switched on. Passes the public checks (a real option, the folder given).
# Loses the cache-settings points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=0 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace cache_settings
def cache_settings(cache_dir):
    return {"jax_dump_ir_to": str(cache_dir)}
