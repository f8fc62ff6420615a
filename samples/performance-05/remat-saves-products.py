# A checkpoint whose policy saves the matrix products (dots_saveable): the residual list is as
# short as with a plain checkpoint, but autodiff keeps values computed inside the layer, not what
# each application receives as the lesson asks, and the backward pass recomputes only the tanh.
# Right values and gradients: it loses the remat points only.
# expect: test_residual_inspection=2 test_remat_layer=0 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace remat_layer
remat_layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)
