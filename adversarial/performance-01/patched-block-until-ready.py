# A timer that disables jax.block_until_ready while it runs, so its "synchronized" calls
# return at once: the measurements end before the results are ready (the patch changes nothing
# the grading kernel uses), so only the synchronization cell is lost.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    jax.block_until_ready = lambda tree: tree
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return samples[0], samples[1:]
