# Calls the one-time cost real as soon as the first call is slower than the slowest steady call.
# That is not the lesson's rule: a first call 1.9 ms above the median, when the steady calls spread
# over 2.0 ms, is slower than all of them by less than their own variation. Every number is right,
# the verdict is not: it loses the reading's points, and the end-to-end audit.
# expect: test_workload=2 test_first_call_evidence=0 test_trace_count=2 test_evidence=2 test_audit=0
# %% solutions
# %% replace first_call_evidence
def first_call_evidence(first_call_seconds, steady_seconds):
    median = statistics.median(steady_seconds)
    one_time = first_call_seconds - median
    return {
        "steady_median_seconds": median,
        "steady_spread_seconds": max(steady_seconds) - min(steady_seconds),
        "one_time_seconds": one_time,
        "one_time_fraction": one_time / first_call_seconds,
        "one_time_is_real": first_call_seconds > max(steady_seconds),  # a proxy for "beyond the spread"
    }
