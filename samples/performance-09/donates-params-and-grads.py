# Asks for the grads to be donated as well as the params. With the lesson's shapes JAX has no
# output left for the grads, drops that part with a warning and marks only the params, so the
# public check's lowered text looks right; with other dtypes XLA would write into the caller's
# grads. Loses the donated-update points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=0 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace donated_update
def make_update():
    return jax.jit(sgd, donate_argnums=(0, 1))
