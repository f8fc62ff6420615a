# Leaves the JAX version out of the key, reading "jaxlib's version" as something other than the JAX the
# description names (the text: upgrading JAX invalidates everything).
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=0 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace cache_invalidation
from jax._src.cache_key import xla_flags_to_exclude_from_cache_key


def cache_hit(first, second):
    def flags(description):
        return sorted(f for f in description["xla_flags"]
                      if f.split("=", 1)[0] not in xla_flags_to_exclude_from_cache_key)
    return (list(first["shape"]) == list(second["shape"]) and first["dtype"] == second["dtype"]
            and flags(first) == flags(second))
