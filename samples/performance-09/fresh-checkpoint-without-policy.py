# Wraps the layer in jax.checkpoint with policy=None when no policy is given: that is remat with
# nothing saved, not "no jax.checkpoint at all" as the task asks. Loses the remat points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=0
# tier: nightly
# %% solutions
# %% replace remat_loss
def remat_loss(policy):
    body = jax.checkpoint(layer, policy=policy)

    def loss(weights, x):
        h, _ = jax.lax.scan(body, x, weights)
        return jnp.mean(h * h)

    return loss
