# Times fewer calls than it was asked to: the clock starts only once the first queued call has
# returned (its dispatch left out), and the total is still divided by every call. On the course's
# instrument that first queued call is held longer than all the queued work, so the reported time
# falls short of what the queued calls took from the first dispatch: the throughput cell is lost.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    outs = [fn(*args)]
    start = time.perf_counter()  # after the first queued call came back
    outs += [fn(*args) for _ in range(calls - 1)]
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / calls
