# A different correct approach: jax.jit called on a plain function, nanosecond clocks,
# synchronizing through each result's own method (the queued timer: a loop keeping every output).
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% replace workload
def _layer(inputs, weight):
    return jnp.tanh(jnp.dot(inputs, weight))

workload = jax.jit(_layer)
# %% replace timer
from time import perf_counter_ns

def time_completed(fn, *args, warm_calls=7):
    def once():
        begin = perf_counter_ns()
        fn(*args).block_until_ready()
        return (perf_counter_ns() - begin) / 1e9

    first = once()
    return first, [once() for _ in range(warm_calls)]
# %% replace queued
def time_queued(fn, *args, calls=50):
    # A loop that keeps every output, a nanosecond clock, and each result's own wait.
    fn(*args).block_until_ready()
    begin = perf_counter_ns()
    outputs = []
    for _ in range(calls):
        outputs.append(fn(*args))
    for output in outputs:
        output.block_until_ready()
    return (perf_counter_ns() - begin) / 1e9 / calls
