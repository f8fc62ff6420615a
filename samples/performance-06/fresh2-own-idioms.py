# A student's own idioms: the newest trace by modification time through pathlib, operations found from
# the metadata by a set of (pid, tid) lines, gaps with zip, waits attributed by bisect over step starts,
# losses written into a preallocated device array, executions grouped with defaultdict, statistics.median (the three numbers are the solution's).
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% replace capture
import pathlib


def capture(fn, trace_dir):
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        result = jax.block_until_ready(fn())
    files = sorted(pathlib.Path(trace_dir).rglob(TRACE_FILE), key=lambda p: p.stat().st_mtime_ns)
    return result, str(files[-1])


def load_trace(path):
    with gzip.open(path, "rt") as handle:
        return json.load(handle)
# %% replace read_trace
import collections


def _device_ops_lines(trace):
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    devices = {e.get("pid") for e in meta
               if e.get("name") == "process_name" and str((e.get("args") or {}).get("name", "")).startswith("/device:")}
    return {(e.get("pid"), e.get("tid")) for e in meta
            if e.get("name") == "thread_name" and e.get("pid") in devices
            and (e.get("args") or {}).get("name") == "XLA Ops"}


def device_time_by_op(trace):
    ops_lines = _device_ops_lines(trace)
    totals = collections.defaultdict(float)
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        if "hlo_op" in (e.get("args") or {}) or (e.get("pid"), e.get("tid")) in ops_lines:
            totals[e["name"]] += e.get("dur", 0.0)
    return dict(totals)


def host_gaps(trace, scope):
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
                   if e.get("ph") == "X" and e.get("name") == scope)
    return [start - end for (_, end), (start, _) in zip(spans, spans[1:])]
# %% replace find_syncs
import bisect


def find_syncs(trace, scope):
    steps = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == scope),
                   key=lambda e: e["ts"])
    if not steps:
        return []
    thread = (steps[0].get("pid"), steps[0].get("tid"))
    starts = [s["ts"] for s in steps]
    last_end = steps[-1]["ts"] + steps[-1]["dur"]
    found = set()
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or (e.get("pid"), e.get("tid")) != thread:
            continue
        if function_name(str(e.get("name", ""))) not in SYNC_CALLS:
            continue
        i = bisect.bisect_right(starts, e["ts"]) - 1
        if i < 0 or (i == len(steps) - 1 and e["ts"] >= last_end):
            continue
        found.add(i)
    return sorted(found)
# %% replace train
def train(step, params, batch, steps):
    losses = jnp.zeros((steps,), jnp.float32)
    for i in range(steps):
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
        losses = losses.at[i].set(loss)
    return params, losses
# %% replace device_time
import collections
import statistics


def device_seconds_per_call(trace, module):
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    devices = {e.get("pid") for e in meta
               if e.get("name") == "process_name" and str((e.get("args") or {}).get("name", "")).startswith("/device:")}
    module_lines = {(e.get("pid"), e.get("tid")) for e in meta
                    if e.get("name") == "thread_name" and e.get("pid") in devices
                    and (e.get("args") or {}).get("name") == "XLA Modules"}
    runs = collections.defaultdict(list)
    durations = []
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        if (e.get("pid"), e.get("tid")) in module_lines and e["name"].split("(", 1)[0] == module:
            durations.append(e["dur"])
        elif "hlo_op" in args and args.get("hlo_module") == module:
            runs[args.get("run_id")].append((e["ts"], e["ts"] + e["dur"]))
    durations += [max(end for _, end in spans) - min(start for start, _ in spans) for spans in runs.values()]
    return statistics.median(durations) * 1e-6
