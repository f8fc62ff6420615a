# Rematerializes the layer but computes its product with bfloat16 operands, as a TPU does by
# default. Where float32 products are in use (this course grades on the CPU), the value and the
# gradient then miss float64 arithmetic by far more than the tolerance that precision allows
# (2e-5 for four layers): the tolerance follows the precision in use, not the loosest one, so
# it loses the gradient points only (the checkpoint and what it saves are right).
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=0 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace remat_layer
remat_layer = jax.checkpoint(lambda v: jnp.tanh((W.astype(jnp.bfloat16) @ v.astype(jnp.bfloat16)).astype(jnp.float32)))
