# Reads operations only as the CPU runtime writes them (an "hlo_op" in args), as the lesson's text
# did before it covered a TPU: on this course's CPU the public checks pass, but a TPU's trace has
# no "hlo_op" (its operations are the events of the device's "XLA Ops" line), so the function finds
# no operation there, and the hidden checks hand it one trace laid out as a TPU writes it. Loses the
# trace-reading points only.
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
    steps = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == scope),
                   key=lambda e: e["ts"])
    return [after["ts"] - (before["ts"] + before["dur"]) for before, after in zip(steps, steps[1:])]
