# Points the cache at the folder and leaves the minimum compile time at its default of one second:
# on a CPU the lesson's programs compile faster than that, so nothing is ever written and every
# process compiles again. Passes the public checks (real options, the folder given). Loses the
# cache-settings points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=0 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace cache_settings
def cache_settings(cache_dir):
    return {"jax_compilation_cache_dir": str(cache_dir)}
