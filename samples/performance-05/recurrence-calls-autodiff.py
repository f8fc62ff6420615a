# "By hand" through jax.grad: the numbers agree, but it is autodiff checking itself, not an
# independent computation, so it loses the by-hand point.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=0
# tier: nightly
# %% solutions
# %% replace reverse_recurrence
def reverse_recurrence(v, weight, depth):
    def loss(u):
        for _ in range(depth):
            u = jnp.tanh(weight @ u)
        return jnp.sum(u * u)

    return jax.grad(loss)(jnp.asarray(v))
