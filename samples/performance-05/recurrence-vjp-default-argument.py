# "By hand" through jax.vjp bound as a default argument when the function is defined: no name in
# the notebook's namespace is jax.vjp when it runs, and the numbers agree, but the backward pass is
# JAX's autodiff, so it loses the by-hand point and keeps the agreement points.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=0
# tier: nightly
# %% solutions
# %% replace reverse_recurrence
def reverse_recurrence(v, weight, depth, _pullback=jax.vjp):
    weight = jnp.asarray(weight)

    def loss(u):
        for _ in range(depth):
            u = jnp.tanh(weight @ u)
        return jnp.sum(u * u)

    _, backward = _pullback(loss, jnp.asarray(v))
    return backward(jnp.float32(1.0))[0]
