# Queues the calls but reads the clock as soon as the last call returns, without waiting for the
# results: it measures dispatch, not the work. Loses the throughput cell only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    outs = [fn(*args) for _ in range(calls)]
    return (time.perf_counter() - start) / calls
