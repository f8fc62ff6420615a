# Correct in other idioms: the capture waits by fetching the result (jax.device_get) and finds its
# file with os.walk; the trace is read as text; the device's op line is looked up with the given
# line_names; sums with dict.get; gaps by walking consecutive pairs in a while loop; the wait
# search walks one time-sorted timeline of steps and calls; the loop keeps its losses in a list and
# stacks them with jnp.asarray after it; executions found in one time-sorted pass, the median by hand;
# the three numbers waited for by copying to NumPy and jax.device_get, timed with time.monotonic, the
# queued calls traced with the notebook's own capture. Full marks.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace capture
def capture(fn, trace_dir):
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        result = fn()
        jax.device_get(result)  # a copy to the host waits for every array in it
    newest, when = None, -1.0
    for folder, _, names in os.walk(trace_dir):
        if TRACE_FILE in names:
            path = os.path.join(folder, TRACE_FILE)
            if os.stat(path).st_mtime >= when:
                newest, when = path, os.stat(path).st_mtime
    return result, newest


def load_trace(path):
    with gzip.open(path, "rt") as handle:
        text = handle.read()
    return json.loads(text)
# %% replace read_trace
def device_time_by_op(trace):
    named = line_names(trace)
    totals = {}
    for event in trace["traceEvents"]:
        if event.get("ph") != "X":
            continue
        op = (event.get("args") or {}).get("hlo_op")
        process, thread = named.get((event.get("pid"), event.get("tid")), ("", ""))
        if op is None and process.startswith("/device:") and thread == "XLA Ops":
            op = event["name"]  # a TPU: the device's op line names no hlo_op
        if op is not None:
            totals[event["name"]] = totals.get(event["name"], 0) + event["dur"]
    return totals


def host_gaps(trace, scope):
    steps = sorted([e for e in trace["traceEvents"] if e.get("name") == scope and e.get("ph") == "X"],
                   key=lambda e: (e["ts"], e["dur"]))
    gaps, i = [], 0
    while i + 1 < len(steps):
        gaps.append(steps[i + 1]["ts"] - steps[i]["ts"] - steps[i]["dur"])
        i += 1
    return gaps
# %% replace find_syncs
def find_syncs(trace, scope):
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if e["name"] == scope]
    if not steps:
        return []
    thread = (steps[0]["pid"], steps[0]["tid"])
    last = max(steps, key=lambda e: e["ts"])
    timeline = sorted([(e["ts"], 0, "step") for e in steps]
                      + [(e["ts"], 1, "wait") for e in events
                         if (e["pid"], e["tid"]) == thread and function_name(e["name"]) in SYNC_CALLS])
    found, step = [], -1
    for ts, _, what in timeline:
        if what == "step":
            step += 1
        elif step >= 0 and (ts <= last["ts"] + last["dur"] or step < len(steps) - 1) and step not in found:
            found.append(step)
    return found
# %% replace train
def train(step, params, batch, steps):
    losses = []
    for _ in range(steps):
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
        losses.append(loss)
    return params, jnp.asarray(losses)
# %% replace device_time
def device_seconds_per_call(trace, module):
    lines = line_names(trace)
    starts, ends = {}, {}
    for e in sorted((e for e in trace["traceEvents"] if e.get("ph") == "X"), key=lambda e: e["ts"]):
        process, thread = lines.get((e.get("pid"), e.get("tid")), ("", ""))
        args = e.get("args") or {}
        if thread == "XLA Modules" and process.startswith("/device:") and e["name"].split("(", 1)[0] == module:
            key = f"device {e['pid']} {args.get('run_id')}"
        elif "hlo_op" in args and args.get("hlo_module") == module:
            key = f"cpu {args.get('run_id')}"
        else:
            continue
        starts.setdefault(key, e["ts"])               # sorted by ts: the first event starts the execution
        ends[key] = max(ends.get(key, e["ts"]), e["ts"] + e["dur"])
    lengths = sorted(ends[k] - starts[k] for k in starts)
    middle = len(lengths) // 2
    median = lengths[middle] if len(lengths) % 2 else (lengths[middle - 1] + lengths[middle]) / 2
    return median / 1_000_000
# %% replace three_numbers
def three_numbers(fn, *args, module, trace_dir, calls=CALLS):
    np.asarray(fn(*args))                          # the first call: a copy to the host waits for it
    samples = []
    for _ in range(calls):
        begin = time.monotonic()
        np.asarray(fn(*args))                      # waits for the result, then the clock
        samples.append(time.monotonic() - begin)
    _, path = capture(lambda: [fn(*args) for _ in range(calls)], trace_dir)   # capture waits inside the trace
    begin = time.monotonic()
    outputs = [fn(*args) for _ in range(calls)]
    jax.device_get(outputs)                        # one wait, for all of them
    throughput = (time.monotonic() - begin) / calls
    samples.sort()
    return dict(latency=(samples[(calls - 1) // 2] + samples[calls // 2]) / 2, throughput=throughput,
                device=device_seconds_per_call(load_trace(path), module))
