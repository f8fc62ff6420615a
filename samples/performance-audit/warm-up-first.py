# Makes an untimed warm-up call before timing, so its "first call" is already a steady call:
# the cost of tracing and compilation disappears from the record. Every measurement is
# synchronized, so it loses the first-call points, and the end-to-end audit.
# expect: test_workload=2 test_timer_first_call=0 test_timer_synchronized=2 test_trace_count=2 test_evidence=2 test_audit=0
# %% solutions
# %% replace timer
def time_first_and_steady(fn, *args, steady_calls=7):
    jax.block_until_ready(fn(*args))  # warm-up: compile before measuring

    def once():
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        return time.perf_counter() - start

    first_call_seconds = once()
    return first_call_seconds, [once() for _ in range(steady_calls)]
