# Matches the program by its exact name on both backends: on a TPU the XLA Modules events are named
# 'jit_matmul(<program id>)', so none of them matches 'jit_matmul'.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=0 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace device_time
def device_seconds_per_call(trace, module):
    lines = line_names(trace)
    durations, runs = [], {}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        process, thread = lines.get((e.get("pid"), e.get("tid")), ("?", "?"))
        if process.startswith("/device:") and thread == "XLA Modules" and e["name"] == module:
            durations.append(e["dur"])
        elif "hlo_op" in args and args.get("hlo_module") == module:
            start, end = runs.get(args.get("run_id"), (e["ts"], e["ts"] + e["dur"]))
            runs[args.get("run_id")] = (min(start, e["ts"]), max(end, e["ts"] + e["dur"]))
    durations += [end - start for start, end in runs.values()]
    return float(np.median(durations)) * 1e-6
