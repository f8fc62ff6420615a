# A different correct approach: jax.jit called on a plain function, nanosecond clock,
# synchronizing through the result's own method.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3
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
