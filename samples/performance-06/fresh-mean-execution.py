# The mean execution, not the median the task asks for: the public hand-written trace's three
# executions have the same mean and median, but one slow execution moves a mean. Loses the device-time
# points only.
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
            first, last = spans.get(args.get("run_id"), (float("inf"), float("-inf")))
            spans[args.get("run_id")] = (min(first, e["ts"]), max(last, e["ts"] + e["dur"]))
        elif process.startswith(DEVICE_PROCESS) and thread == "XLA Modules" and e["name"].split("(")[0] == module:
            whole.append(float(e["dur"]))
    durations = [last - first for first, last in spans.values()] + whole
    return float(np.mean(durations)) / 1e6
