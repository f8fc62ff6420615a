# Reads executions only as the CPU runtime writes them (operations whose args name the module, grouped
# by run_id): on this course's CPU every public check passes, but a TPU writes no hlo_module; its
# executions are the events of the device's XLA Modules line, and the hidden checks hand the function
# a trace laid out as a TPU writes it. Loses the device-time points only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=0 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace device_time
def device_seconds_per_call(trace, module):
    runs = {}
    for event in trace["traceEvents"]:
        args = event.get("args") or {}
        if event.get("ph") == "X" and "hlo_op" in args and args.get("hlo_module") == module:
            start, end = runs.get(args.get("run_id"), (event["ts"], event["ts"] + event["dur"]))
            runs[args.get("run_id")] = (min(start, event["ts"]), max(end, event["ts"] + event["dur"]))
    return float(np.median([end - start for start, end in runs.values()])) / 1e6 if runs else 0.0
