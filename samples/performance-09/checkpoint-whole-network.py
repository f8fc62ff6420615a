# Wraps the whole loss in jax.checkpoint with the policy instead of each layer: the backward pass
# runs the forward scan again and keeps what that scan saves, so nothing_saveable recomputes nothing
# that lowers the memory. Loses the remat points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=0
# tier: nightly
# %% solutions
# %% replace remat_loss
def remat_loss(policy):
    def loss(weights, x):
        h, _ = jax.lax.scan(layer, x, weights)
        return jnp.mean(h * h)

    return loss if policy is None else jax.checkpoint(loss, policy=policy)
