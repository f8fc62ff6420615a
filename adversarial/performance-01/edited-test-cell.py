# Replaces the synchronization test with `pass`: nbgrader restores the test cell first.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    first = time.perf_counter(); fn(*args); first = time.perf_counter() - first
    warm = []
    for _ in range(warm_calls):
        start = time.perf_counter(); fn(*args); warm.append(time.perf_counter() - start)
    return first, warm
# %% replace test_timer_synchronized
pass
