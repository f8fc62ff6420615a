# Waits for every result, but reports the mean of the warm calls as every warm sample: the
# samples no longer belong to their calls. Loses the synchronization cell only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(warm_calls):
        jax.block_until_ready(fn(*args))
    mean = (time.perf_counter() - start) / warm_calls
    return first, [mean] * warm_calls
