# Reads a gap as the time from one step's start to the next step's start: the task defines it as the
# next start minus this step's end (ts + dur). Loses the trace-reading points only.
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
        process, thread = names.get((e.get("pid"), e.get("tid")), ("", ""))
        if "hlo_op" in (e.get("args") or {}) or (process.startswith(DEVICE_PROCESS) and thread == OPS_LINE):
            totals[e["name"]] = totals.get(e["name"], 0.0) + float(e.get("dur", 0.0))
    return totals


def host_gaps(trace, scope):
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
                   if e.get("ph") == "X" and e.get("name") == scope)
    return [following[0] - current[0] for current, following in zip(spans, spans[1:])]
