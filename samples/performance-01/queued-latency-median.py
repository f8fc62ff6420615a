# Answers the throughput question with Task 2's timer: as many calls as asked, but each one waited for
# before the next, and their median returned. That is the latency of one synchronous call, not the
# time per call of calls queued back to back. Loses the throughput cell only.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=0
# tier: nightly
# %% solutions
# %% replace queued
def time_queued(fn, *args, calls=50):
    _, warm = time_completed(fn, *args, warm_calls=calls)  # one first call apart, then calls synchronous calls
    return sorted(warm)[len(warm) // 2]
