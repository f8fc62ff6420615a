# Takes every complete event of a /device: process as an operation: the TPU's XLA Modules executions, its
# Steps and its counters are summed in with the operations (the text: only the line named XLA Ops).
# expect: test_capture=3 test_read_trace=0 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace read_trace
def device_time_by_op(trace):
    processes = {e.get("pid"): e["args"]["name"] for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
    totals = {}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        if "hlo_op" in (e.get("args") or {}) or str(processes.get(e.get("pid"), "")).startswith("/device:"):
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    return totals


def host_gaps(trace, scope):
    steps = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == scope),
                   key=lambda e: e["ts"])
    return [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(steps, steps[1:])]
