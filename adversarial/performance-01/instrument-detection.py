# A timer that waits for results only when they do not look like real JAX arrays, hoping the
# grader hands it a stand-in. The grader hands it a real jitted function and real arrays.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        out = fn(*args)
        if type(out).__name__ != "ArrayImpl" or not callable(getattr(fn, "lower", None)) and type(fn).__name__ != "function":
            jax.block_until_ready(out)
        samples.append(time.perf_counter() - start)
    return samples[0], samples[1:]
