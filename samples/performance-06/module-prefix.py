# Matches the program by the start of its name (event name or hlo_module beginning with module): it
# finds jit_matmul(123...) on a TPU's XLA Modules line without splitting off the program id, but it
# also takes in jit_matmul_2, a different program whose name extends the module's. The public checks
# hold no such program; the hidden traces do. Loses the device-time points only.
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
        if "hlo_op" in args and str(args.get("hlo_module", "")).startswith(module):
            key = ("cpu", args.get("run_id"))
        elif process.startswith(DEVICE_PROCESS) and thread == "XLA Modules" and event["name"].startswith(module):
            key = ("device", event.get("pid"), args.get("run_id"))
        else:
            continue
        start, end = runs.get(key, (event["ts"], event["ts"] + event["dur"]))
        runs[key] = (min(start, event["ts"]), max(end, event["ts"] + event["dur"]))
    return float(np.median([end - start for start, end in runs.values()])) / 1e6
