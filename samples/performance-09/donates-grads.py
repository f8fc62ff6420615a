# Donates the wrong argument, the grads (the same shapes as the params): XLA writes the new params
# into the grads' buffers, the caller's grads are deleted, and the params it no longer needs stay
# allocated. Loses the donated-update points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=0 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace donated_update
def make_update():
    return jax.jit(sgd, donate_argnums=1)
