# A checkpoint whose policy saves everything: the jaxpr shows a checkpoint around each layer, but
# nothing is rematerialized (autodiff saves as many residuals as without it). The gradients are
# still right, so it loses the remat points only.
# expect: test_residual_inspection=2 test_remat_layer=0 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace remat_layer
remat_layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.everything_saveable)
