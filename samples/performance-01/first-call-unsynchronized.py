# Waits for every warm call's result but reads the clock right after the first call returns: the
# first call's time is its dispatch, not its computation (the instrument is compiled before it is
# handed over, so no compilation hides the missing wait). Keeps the first call apart, so it loses
# the synchronization points only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    start = time.perf_counter()
    out = fn(*args)
    first_call_seconds = time.perf_counter() - start
    jax.block_until_ready(out)
    warm_samples_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        warm_samples_seconds.append(time.perf_counter() - start)
    return first_call_seconds, warm_samples_seconds
