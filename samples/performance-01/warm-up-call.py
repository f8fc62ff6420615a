# Makes an untimed warm-up call first, so the "first call" it reports is already compiled.
# Loses the first-call cell only.
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    jax.block_until_ready(fn(*args))  # warm up
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return samples[0], samples[1:]
