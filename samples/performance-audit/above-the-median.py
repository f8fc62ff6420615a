# Reads a one-time cost as real as soon as the first call is slower than the steady median:
# a median alone says nothing of how much the steady calls vary, and a first call inside their
# middle half (the public check's 1.25 ms) shows nothing. Every number is right, the verdict is
# not: it loses the reading's points, and the end-to-end audit.
# expect: test_workload=2 test_first_call_evidence=0 test_trace_count=2 test_evidence=2 test_audit=0
# tier: nightly
# %% solutions
# %% replace first_call_evidence
def first_call_evidence(first_call_seconds, steady_seconds):
    median = statistics.median(steady_seconds)
    one_time = first_call_seconds - median
    return {
        "steady_median_seconds": median,
        "steady_middle_half_seconds": [float(q) for q in np.percentile(steady_seconds, [25, 75])],
        "one_time_seconds": one_time,
        "one_time_fraction": one_time / first_call_seconds,
        "one_time_is_real": one_time > 0,
    }
