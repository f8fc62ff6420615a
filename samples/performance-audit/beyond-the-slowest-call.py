# Calls the one-time cost real only when the first call is slower than the slowest steady call,
# a full range where the lesson asks for the middle half: one busy steady call then hides a first
# call that lies well above the steady middle half. Every number is right, the verdict is not: it
# loses the reading's points, and the end-to-end audit.
# expect: test_workload=2 test_first_call_evidence=0 test_trace_count=2 test_evidence=2 test_audit=0
# tier: nightly
# %% solutions
# %% replace first_call_evidence
def first_call_evidence(first_call_seconds, steady_seconds):
    median = statistics.median(steady_seconds)
    one_time = first_call_seconds - median
    return {
        "steady_median_seconds": median,
        "steady_middle_half_seconds": list(np.percentile(steady_seconds, [25, 75])),
        "one_time_seconds": one_time,
        "one_time_fraction": one_time / first_call_seconds,
        "one_time_is_real": first_call_seconds > max(steady_seconds),  # the slowest, not the 75th percentile
    }
