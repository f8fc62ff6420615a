# Times each call with time.process_time(), the process's CPU time, and waits for every result.
# On a CPU backend the device work runs on a thread of this process, so the computation counts;
# a wait for anything else (an accelerator, a transfer, the host) does not. The lesson asks for a
# wall clock: loses the timer points only.
# expect: test_roofline_point=3 test_time_calls=0 test_classify=3 test_hand_intensity=2
# %% solutions
# %% replace time_calls
def time_calls(fn, *args, warm_calls=5):
    start = time.process_time()
    jax.block_until_ready(fn(*args))
    first = time.process_time() - start
    warm = []
    for _ in range(warm_calls):
        start = time.process_time()
        jax.block_until_ready(fn(*args))
        warm.append(time.process_time() - start)
    return first, warm
