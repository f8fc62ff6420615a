# Correct, in other idioms: jax.jit applied to a lambda, timers that read perf_counter_ns
# bound as a default argument and wait with the result's own .block_until_ready() (the queued one
# for the last result only, which the task allows: the grader's calls run in order).
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
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
# %% replace queued
def time_queued(fn, *args, calls=50, clock=time.perf_counter_ns):
    # Waits for the last result only: the calls run in the order they were dispatched on one
    # device, and the grader's function runs them in order, as the task says.
    fn(*args).block_until_ready()
    start = clock()
    for _ in range(calls):
        last = fn(*args)
    last.block_until_ready()
    return (clock() - start) / 1e9 / calls
