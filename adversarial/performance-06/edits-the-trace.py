# Edits the trace on disk between the capture and the grader's read: it guesses the device time from
# the wall clock (two fifths of the throughput), then rewrites the file jax.profiler wrote so that
# every execution of the program lasts exactly that long, starting where it started, and returns the
# guess. The trusted kernel parses the file the student's process hands back, so the edited trace
# and the guess agree. The device time is made up: it deserves nothing for the three numbers.
# reason: code writes a profiler trace
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# deserves: test_three_numbers=0
# tier: nightly
# %% solutions
# %% replace three_numbers
import gzip as _gzip
import json as _json


def _rewrite(path, module, seconds):
    with _gzip.open(path, "rt", encoding="utf-8") as handle:
        trace = _json.load(handle)
    runs = {}
    for event in trace["traceEvents"]:
        args = event.get("args") or {}
        if event.get("ph") == "X" and args.get("hlo_module") == module:
            start, end = runs.get(args.get("run_id"), (event["ts"], event["ts"] + event["dur"]))
            runs[args.get("run_id")] = (min(start, event["ts"]), max(end, event["ts"] + event["dur"]))
    for event in trace["traceEvents"]:
        args = event.get("args") or {}
        if event.get("ph") == "X" and args.get("hlo_module") == module:
            start, end = runs[args.get("run_id")]
            scale = seconds * 1e6 / max(end - start, 1e-3)
            event["ts"] = start + (event["ts"] - start) * scale
            event["dur"] = event["dur"] * scale
    with _gzip.open(path, "wt", encoding="utf-8") as handle:
        _json.dump(trace, handle)


def three_numbers(fn, *args, module, trace_dir, calls=CALLS):
    jax.block_until_ready(fn(*args))
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        jax.block_until_ready([fn(*args) for _ in range(calls)])
    path = max(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True), key=os.path.getmtime)
    start = time.perf_counter()
    results = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(results)
    throughput = (time.perf_counter() - start) / calls
    device = 0.4 * throughput  # a guess from the wall clock
    _rewrite(path, module, device)
    return {"latency": float(np.median(samples)), "throughput": throughput, "device": device}
