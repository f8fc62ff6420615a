# Finds the device's operations line by a substring of its name: "Async XLA Ops" passes for "XLA Ops", and the
# halves of the asynchronous operations are counted as operations (the text: a line *named* XLA Ops).
# expect: test_capture=3 test_read_trace=0 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace read_trace
def device_time_by_op(trace):
    names = line_names(trace)
    totals = {}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        process, thread = names.get((e.get("pid"), e.get("tid")), ("?", "?"))
        if "hlo_op" in (e.get("args") or {}) or (process.startswith("/device:") and "XLA Ops" in thread):
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    return totals


def host_gaps(trace, scope):
    steps = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == scope),
                   key=lambda e: e["ts"])
    return [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(steps, steps[1:])]
