# Compares the XLA flags as a set: right about their order and the flags JAX leaves out, wrong when
# a flag is written twice, which JAX hashes twice (a sorted list, not a set). Loses the invalidation
# points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=0 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace cache_invalidation
def cache_hit(first, second):
    from jax._src.cache_key import xla_flags_to_exclude_from_cache_key as left_out

    def key(compile_):
        flags = frozenset(flag for flag in compile_["xla_flags"] if flag.split("=")[0] not in left_out)
        return tuple(compile_["shape"]), compile_["dtype"], compile_["jax_version"], flags

    return key(first) == key(second)
