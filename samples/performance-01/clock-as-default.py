# Correct, in other idioms: jax.jit applied to a lambda, and a timer that reads perf_counter_ns
# bound as a default argument and waits with the result's own .block_until_ready().
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3
# tier: nightly
# %% replace workload
workload = jax.jit(lambda x, w: jnp.tanh(jnp.matmul(x, w)))
# %% replace timer
def time_completed(fn, *args, warm_calls=7, clock=time.perf_counter_ns):
    def once():
        start = clock()
        fn(*args).block_until_ready()
        return (clock() - start) / 1e9
    first_call_seconds = once()
    return first_call_seconds, [once() for _ in range(warm_calls)]
