# Jits tanh alone: the product runs eagerly, outside the compiled program the task asks for.
# expect: test_workload=0 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
_jitted_tanh = jax.jit(jnp.tanh)


def workload(x, w):
    return _jitted_tanh(x @ w)
