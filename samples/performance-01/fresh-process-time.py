# Reads time.process_time() around each waited call: this process's CPU time, which the text rules out (it
# leaves out every moment the process waits).
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    def waited():
        start = time.process_time()
        jax.block_until_ready(fn(*args))
        return time.process_time() - start

    first = waited()
    return first, [waited() for _ in range(warm_calls)]
