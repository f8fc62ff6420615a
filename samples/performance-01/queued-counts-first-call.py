# Starts the clock before the first call: its tracing, compiling and first run are counted as if
# they were throughput. Loses the throughput cell only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    outs = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / calls
