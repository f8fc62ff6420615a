# Replaces numpy.testing.assert_allclose with a function that accepts anything, and returns
# zeros of the right shape.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% replace workload
np.testing.assert_allclose = lambda *args, **kwargs: None
np.allclose = lambda *args, **kwargs: True

@jax.jit
def workload(x, w):
    return jnp.zeros((x.shape[0], w.shape[1]), jnp.float32)
