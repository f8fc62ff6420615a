# Sets the folder and a minimum compile time of 0, and leaves the entry-size limit at its default (0: no limit
# on a local folder, as the text says, though an override may raise it elsewhere).
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace cache_settings
def cache_settings(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir, "jax_persistent_cache_min_compile_time_secs": 0.0}
