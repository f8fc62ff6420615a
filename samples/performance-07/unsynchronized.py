# Reads the clock as soon as the call returns, without waiting for its result: every "achieved"
# rate is a dispatch rate. Loses the timer points only.
# expect: test_roofline_point=3 test_time_calls=0 test_classify=3 test_hand_intensity=2
# %% solutions
# %% replace time_calls
def time_calls(fn, *args, warm_calls=5):
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    warm = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        fn(*args)
        warm.append(time.perf_counter() - start)
    return first, warm
