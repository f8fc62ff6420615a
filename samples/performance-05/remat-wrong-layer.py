# Rematerializes a different layer: v @ W instead of W @ v (the transpose of the weight). The
# checkpoint is real and saves fewer residuals, but the network no longer computes what it did,
# so the gradient points are lost.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=0 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace remat_layer
remat_layer = jax.checkpoint(lambda v: jnp.tanh(v @ W))
