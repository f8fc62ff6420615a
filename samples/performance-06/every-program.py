# Reads the device time of every execution in the trace, whatever program it belongs to: in a trace of
# one function's calls (the notebook's matmul, the grader's instrument) that is the same number, so
# it passes on the step of the lesson's loop as first written, but the public check's hand-written trace
# holds a second program, and so do the hidden traces, as a loop's holds jit_stack. Loses the device-time
# points only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=0 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace device_time
def device_seconds_per_call(trace, module):
    lines = line_names(trace)
    runs = {}
    for event in trace["traceEvents"]:
        if event.get("ph") != "X":
            continue
        args = event.get("args") or {}
        process, thread = lines.get((event.get("pid"), event.get("tid")), ("", ""))
        on_modules_line = process.startswith(DEVICE_PROCESS) and thread == "XLA Modules"
        if "hlo_op" in args or on_modules_line:  # any program's execution, not only the module's
            key = (on_modules_line, event.get("pid"), args.get("run_id"))
            start, end = runs.get(key, (event["ts"], event["ts"] + event["dur"]))
            runs[key] = (min(start, event["ts"]), max(end, event["ts"] + event["dur"]))
    return float(np.median([end - start for start, end in runs.values()])) / 1e6
