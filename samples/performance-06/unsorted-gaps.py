# Takes the steps in the order the file lists them: the profiler happens to write one thread's
# events in time order, so the public checks pass, but nothing in the format promises it, and the
# hidden traces list their events in another order. Loses the trace-reading points only.
# expect: test_capture=3 test_read_trace=0 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace read_trace
def device_time_by_op(trace):
    totals = {}
    for event in trace["traceEvents"]:
        if event.get("ph") == "X" and "hlo_op" in (event.get("args") or {}):
            totals[event["name"]] = totals.get(event["name"], 0.0) + event["dur"]
    return totals


def host_gaps(trace, scope):
    steps = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == scope]
    return [after["ts"] - (before["ts"] + before["dur"]) for before, after in zip(steps, steps[1:])]
