# Queues the calls and waits once at the end, but reports the median time between dispatches (the host's
# dispatch cost), not the whole time until every result is ready divided by the calls.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    jax.block_until_ready(fn(*args))
    stamps, outs = [time.perf_counter()], []
    for _ in range(calls):
        outs.append(fn(*args))
        stamps.append(time.perf_counter())
    jax.block_until_ready(outs)
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
    return float(gaps[len(gaps) // 2])
