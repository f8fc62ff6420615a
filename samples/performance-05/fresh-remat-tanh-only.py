# Rematerializes only the tanh (jax.checkpoint around the nonlinearity, the product outside it): each
# layer's product is still saved, and the product is not recomputed in the backward pass.
# expect: test_residual_inspection=2 test_remat_layer=0 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace remat_layer
_remat_tanh = jax.checkpoint(jnp.tanh)


def remat_layer(v):
    return _remat_tanh(W @ v)
