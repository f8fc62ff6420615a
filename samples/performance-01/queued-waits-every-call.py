# Times the queued calls the latency way: waits for each result before making the next call, so
# the host's round trip is in every call and nothing overlaps. Loses the throughput cell only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(fn(*args))
    return (time.perf_counter() - start) / calls
