# Compares the XLA flags as written, in order and with the dump folder: JAX sorts them before
# hashing and leaves the dump settings on its list out, so reordered flags or a dump folder still
# hit. Loses the invalidation points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=0 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace cache_invalidation
def cache_hit(first, second):
    same = lambda key: first[key] == second[key]
    return same("shape") and same("dtype") and same("jax_version") and list(first["xla_flags"]) == list(second["xla_flags"])
