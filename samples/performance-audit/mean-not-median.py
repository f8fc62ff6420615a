# Takes the mean of the steady calls where the lesson asks for their median: one busy call drags
# the mean up, so the one-time cost and its fraction come out wrong (the public example's busy
# 3 ms call already does). It loses the reading's points, and the end-to-end audit that checks it
# again.
# expect: test_workload=2 test_first_call_evidence=0 test_trace_count=2 test_evidence=2 test_audit=0
# tier: nightly
# %% solutions
# %% replace first_call_evidence
def first_call_evidence(first_call_seconds, steady_seconds):
    centre = statistics.mean(steady_seconds)  # not the median: one slow call moves it
    low, high = np.percentile(steady_seconds, [25, 75])
    one_time = first_call_seconds - centre
    return {
        "steady_median_seconds": centre,
        "steady_middle_half_seconds": [low, high],
        "one_time_seconds": one_time,
        "one_time_fraction": one_time / first_call_seconds,
        "one_time_is_real": bool(first_call_seconds > high),
    }
