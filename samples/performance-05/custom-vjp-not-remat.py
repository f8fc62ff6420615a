# Saves fewer residuals with a hand-written derivative (jax.custom_vjp keeps only tanh's output)
# instead of rematerializing: right gradients and a shorter residual list, but nothing is
# recomputed and no checkpoint is in the program, so it loses the remat points.
# expect: test_residual_inspection=2 test_remat_layer=0 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace remat_layer
@jax.custom_vjp
def remat_layer(v):
    return layer(v)


def _layer_forward(v):
    t = layer(v)
    return t, t


def _layer_backward(t, g):
    return (W.T @ ((1 - t * t) * g),)


remat_layer.defvjp(_layer_forward, _layer_backward)
