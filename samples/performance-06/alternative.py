# A different correct approach: start_trace/stop_trace with try/finally and pathlib; the file read
# as bytes and decompressed; the device's op lines found from the metadata events alone (no
# line_names), totals in a defaultdict; gaps and step windows from NumPy arrays and
# bisect; the losses kept in a tuple and joined with jnp.hstack after the loop; executions grouped in a
# defaultdict with statistics.median; the three numbers timed with perf_counter_ns, the method
# .block_until_ready() and start_trace/stop_trace. Full marks.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# %% solutions
# %% replace capture
import pathlib


def capture(fn, trace_dir):
    jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
    try:
        result = fn()
        jax.block_until_ready(result)
    finally:
        jax.profiler.stop_trace()
    files = sorted(pathlib.Path(trace_dir).rglob(TRACE_FILE), key=lambda p: p.stat().st_mtime)
    return result, str(files[-1])


def load_trace(path):
    with open(path, "rb") as handle:
        return json.loads(gzip.decompress(handle.read()).decode("utf-8"))
# %% replace read_trace
from collections import defaultdict


def device_time_by_op(trace):
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    chips = {e["pid"] for e in meta if e["name"] == "process_name" and e["args"]["name"].startswith("/device:")}
    op_lines = {(e["pid"], e["tid"]) for e in meta
                if e["name"] == "thread_name" and e["pid"] in chips and e["args"]["name"] == "XLA Ops"}
    totals = defaultdict(float)
    for event in trace["traceEvents"]:
        args = event.get("args", {})
        if event.get("ph") != "X":
            continue
        if (isinstance(args, dict) and "hlo_op" in args) or (event.get("pid"), event.get("tid")) in op_lines:
            totals[event["name"]] += event["dur"]
    return dict(totals)


def host_gaps(trace, scope):
    spans = np.array(sorted((e["ts"], e["dur"]) for e in trace["traceEvents"]
                            if e.get("ph") == "X" and e.get("name") == scope), dtype=np.float64).reshape(-1, 2)
    return (spans[1:, 0] - (spans[:-1, 0] + spans[:-1, 1])).tolist()
# %% replace find_syncs
import bisect


def find_syncs(trace, scope):
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e["name"] == scope), key=lambda e: e["ts"])
    if not steps:
        return []
    starts = [s["ts"] for s in steps]
    last_end = steps[-1]["ts"] + steps[-1]["dur"]
    here = (steps[0]["pid"], steps[0]["tid"])
    found = set()
    for e in events:
        if (e["pid"], e["tid"]) != here or function_name(e["name"]) not in SYNC_CALLS:
            continue
        if e["ts"] < starts[0] or e["ts"] > last_end:
            continue  # before the loop, or after its last step
        found.add(bisect.bisect_right(starts, e["ts"]) - 1)
    return sorted(found)
# %% replace train
def train(step, params, batch, steps):
    losses = ()
    for _ in range(steps):
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
            losses += (loss,)  # a reference to a device value: nothing comes back to the host
    return params, jnp.hstack(losses)
# %% replace device_time
import statistics


def device_seconds_per_call(trace, module):
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    chips = {e["pid"] for e in meta if e["name"] == "process_name" and e["args"]["name"].startswith("/device:")}
    module_lines = {(e["pid"], e["tid"]) for e in meta
                    if e["name"] == "thread_name" and e["pid"] in chips and e["args"]["name"] == "XLA Modules"}
    spans = defaultdict(list)  # one execution: [start, end] of each of its events
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        on_line = (e["pid"], e["tid"]) in module_lines and e["name"].partition("(")[0] == module
        if on_line or ("hlo_op" in args and args.get("hlo_module") == module):
            spans[(on_line, e["pid"], args.get("run_id"))].append((e["ts"], e["ts"] + e["dur"]))
    return statistics.median(max(b for _, b in s) - min(a for a, _ in s) for s in spans.values()) * 1e-6
# %% replace three_numbers
def three_numbers(fn, *args, module, trace_dir, calls=CALLS):
    fn(*args).block_until_ready()                  # the first call, left out of every number
    latencies = []
    for _ in range(calls):
        before = time.perf_counter_ns()
        fn(*args).block_until_ready()
        latencies.append((time.perf_counter_ns() - before) * 1e-9)
    jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
    try:
        jax.block_until_ready([fn(*args) for _ in range(calls)])
    finally:
        jax.profiler.stop_trace()
    newest = max(pathlib.Path(trace_dir).rglob(TRACE_FILE), key=lambda p: p.stat().st_mtime)
    before = time.perf_counter_ns()
    pending = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(pending)
    elapsed = (time.perf_counter_ns() - before) * 1e-9
    return {"latency": statistics.median(latencies), "throughput": elapsed / calls,
            "device": device_seconds_per_call(load_trace(str(newest)), module)}
