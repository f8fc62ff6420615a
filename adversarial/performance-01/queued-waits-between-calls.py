# A throughput timer dressed as queued: it waits for each queued call's result before making the
# next, except between the last two, so the instrument sees one call made while the previous result
# was pending and the clock's total falls between the bounds every queued run keeps (on the
# instrument, as on one device, queued work runs one call after another anyway). It times latency,
# one call at a time, for all but one call: it deserves nothing for the throughput cell.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    outs = []
    for i in range(calls):
        outs.append(fn(*args))
        if i < calls - 2:
            jax.block_until_ready(outs[-1])  # waited for, call by call, but for the last two
    jax.block_until_ready(outs)
    return (time.perf_counter() - start) / calls
