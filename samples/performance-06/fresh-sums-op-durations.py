# Adds the durations of an execution's operations instead of taking its span from the first operation's
# start to the last one's end (the task's device time of one execution on a CPU): the operations of
# one execution may overlap or leave gaps. Loses the device-time points only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=0 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace device_time
def device_seconds_per_call(trace, module):
    names = line_names(trace)
    spans, whole = {}, []
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        process, thread = names.get((e.get("pid"), e.get("tid")), ("", ""))
        if "hlo_op" in args and args.get("hlo_module") == module:
            _, busy = spans.get(args.get("run_id"), (0.0, 0.0))
            spans[args.get("run_id")] = (0.0, busy + e["dur"])
        elif process.startswith(DEVICE_PROCESS) and thread == "XLA Modules" and e["name"].split("(")[0] == module:
            whole.append(float(e["dur"]))
    durations = [last - first for first, last in spans.values()] + whole
    return float(np.median(durations)) / 1e6
