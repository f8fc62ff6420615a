# Times warm_calls + 1 waited calls and reports the first apart, but also keeps it as the first warm sample,
# dropping the last: the warm samples hold the first call's tracing and compilation.
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return samples[0], samples[:warm_calls]
