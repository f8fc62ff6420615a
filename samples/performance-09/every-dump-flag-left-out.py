# Leaves every flag that starts with --xla_dump out of the key, a rule of thumb: JAX leaves out
# only the flags on its list, and a dump flag not on it (--xla_dump_large_constants) changes the
# key. Also keeps performance-08's host device count flag in, which JAX leaves out. Loses the
# invalidation points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=0 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace cache_invalidation
def cache_hit(first, second):
    def key(compile_):
        flags = frozenset(flag for flag in compile_["xla_flags"] if not flag.startswith("--xla_dump"))
        return tuple(compile_["shape"]), compile_["dtype"], compile_["jax_version"], flags

    return key(first) == key(second)
