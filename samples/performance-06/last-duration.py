# Keeps the duration of the last event of each operation instead of summing them: every name is
# right and every value a real duration, so the public checks pass; the totals are wrong whenever
# an operation ran more than once. Loses the trace-reading points only.
# expect: test_capture=3 test_read_trace=0 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace read_trace
def device_time_by_op(trace):
    totals = {}
    for event in trace["traceEvents"]:
        if event.get("ph") == "X" and "hlo_op" in (event.get("args") or {}):
            totals[event["name"]] = event["dur"]
    return totals


def host_gaps(trace, scope):
    steps = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == scope),
                   key=lambda e: e["ts"])
    return [after["ts"] - (before["ts"] + before["dur"]) for before, after in zip(steps, steps[1:])]
