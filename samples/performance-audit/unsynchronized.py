# Waits for each result, but only after reading the clock: every timing measures dispatch, not
# the computation. It keeps the first call apart, so it loses the synchronization points, and
# the end-to-end audit that includes them.
# expect: test_workload=2 test_timer_first_call=1 test_timer_synchronized=0 test_trace_count=2 test_evidence=2 test_audit=0
# %% solutions
# %% replace timer
def time_first_and_steady(fn, *args, steady_calls=7):
    def once():
        start = time.perf_counter()
        result = fn(*args)
        elapsed = time.perf_counter() - start
        jax.block_until_ready(result)  # too late: the clock was already read
        return elapsed

    first_call_seconds = once()
    return first_call_seconds, [once() for _ in range(steady_calls)]
