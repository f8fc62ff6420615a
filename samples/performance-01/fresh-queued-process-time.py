# Queues the calls with one wait, as the task says, but reads time.process_time(): CPU time, not a wall clock.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    start = time.process_time()
    outs = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(outs)
    return (time.process_time() - start) / calls
