# Writes the layer in jax.numpy but never compiles it with jax.jit ("jnp runs on the device anyway").
# expect: test_workload=0 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
def workload(x, w):
    return jnp.tanh(jnp.matmul(x, w))
