# Makes the first call outside the clock but does not wait for it: its work is still running when
# the clock starts, and the queued calls wait behind it. Loses the throughput cell only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    fn(*args)  # the first call, made but not waited for
    start = time.perf_counter()
    outs = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / calls
