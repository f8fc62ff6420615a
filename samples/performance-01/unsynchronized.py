# Times the call without waiting for its result: measures dispatch, not the computation.
# It keeps the first call apart, so it loses the synchronization points only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    start = time.perf_counter()
    fn(*args)
    first_call_seconds = time.perf_counter() - start
    warm_samples_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        fn(*args)
        warm_samples_seconds.append(time.perf_counter() - start)
    return first_call_seconds, warm_samples_seconds
