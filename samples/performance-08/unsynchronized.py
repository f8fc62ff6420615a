# Reads the clock as soon as the call returns, before the step's result is ready: it times
# dispatch, not the step. Loses the timer cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_timer=0
# %% solutions
# %% replace time_step
def time_step(fn, *args, repeats=5):
    import time

    samples = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        fn(*args)
        samples.append(time.perf_counter() - start)
    return samples[0], samples[1:]
