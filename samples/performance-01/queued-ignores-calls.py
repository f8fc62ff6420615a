# Always makes 50 calls, whatever `calls` asks for (the default read as a constant): the grader
# asks for other numbers. Loses the throughput cell only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    outs = [fn(*args) for _ in range(50)]
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / 50
