# A different correct approach: start_trace/stop_trace with try/finally and pathlib; the file read
# as bytes and decompressed; the device's op lines found from the metadata events alone (no
# line_names), totals in a defaultdict; gaps and step windows from NumPy arrays and
# bisect; the losses kept in a tuple and joined with jnp.hstack after the loop. Full marks.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3
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
