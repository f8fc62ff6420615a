# The generic forger: nothing is solved. One cell finds the course package in its own kernel by a
# name suffix (no package name written anywhere), replaces the probe dispatcher, and answers this
# lesson's capture and training probes from their own arguments: the dispatches the grader's plan
# allows (asked for, never run), a well-formed trace file of them (the process and thread names,
# the annotation named at grading time, executions of the module named then with their run ids, on
# a clock of its own), the results computed with NumPy from the values it was handed; and, for the
# probes the grader once read, the summaries they used to send (events, run ids, results). Its own
# capture does not wait inside the trace and its loop runs the lesson's 8 steps whatever it is asked
# (enough for the public checks, kept bound by a hook after the later cells); the trace readers
# stay unwritten. The grader parses the file's bytes itself: executions that start before the pauses
# it made before their dispatch ended were never seen by a profiler.
# reason: code iterates sys.modules
# expect: test_capture=0 test_read_trace=0 test_find_syncs=0 test_train=0 test_device_time=0 test_three_numbers=0
# %% replace capture
import importlib
import sys

# The course's probes, found by a name suffix: loaded already, or beside the channel's agent.
_found = [name for name in list(sys.modules) if name.endswith(".kernel.probes")]
_found += [name[:-len("agent")] + "probes" for name in list(sys.modules) if name.endswith(".kernel.agent")]
_probes = importlib.import_module(_found[0])
_real_run = _probes.run


def _events(scope, module, runs, steps=0):
    """A trace of `runs` executions of `module` under `scope` (or one `scope` per step), made up."""
    events = [{"ph": "M", "pid": 7, "name": "process_name", "args": {"name": "/host:CPU"}},
              {"ph": "M", "pid": 7, "tid": 1, "name": "thread_name", "args": {"name": "python"}},
              {"ph": "M", "pid": 7, "tid": 2, "name": "thread_name", "args": {"name": "tf_XLAPjRtCpuClient/0"}}]
    if not steps:
        events.append({"ph": "X", "pid": 7, "tid": 1, "ts": 40.0, "dur": 300.0, "name": scope})
    for i in range(runs):
        if steps:
            events.append({"ph": "X", "pid": 7, "tid": 1, "ts": 40.0 + 1500.0 * i, "dur": 60.0, "name": scope})
        events.append({"ph": "X", "pid": 7, "tid": 2, "ts": 80.0 + 1500.0 * i, "dur": 1400.0, "name": "fusion",
                       "args": {"hlo_op": "fusion", "hlo_module": module, "run_id": str(4000 + i)}})
    return events


def _file(events):
    return gzip.compress(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}).encode())


def _forged(name, *args, **kwargs):
    if name == "profiling.capture_region":
        capture, scope, fname, size, plan = args[:5]
        if isinstance(plan, int):  # the grader's older probe: a summary of a trace, from the names and count
            calls, scale, values, offset, folder = plan, args[5], np.full(8, 0.5, np.float32), 0.25, "trace"
        else:
            values, scale, offset, folder = args[5:9]
            calls = 0
            while plan.next():  # the dispatches the grader allows, asked for and never run
                calls += 1
        result = np.asarray(values, np.float32)
        for _ in range(calls):
            result = np.tanh(result * np.float32(scale) + np.float32(offset)).astype(np.float32)
        folder = f"/tmp/{folder}"
        path = f"{folder}/plugins/profile/2099_01_01_00_00_00/{TRACE_FILE}"
        events = _events(scope, f"jit_{fname}", calls)
        return {"trace_dir": folder, "older": f"{folder}/plugins/profile/2000_01_01_00_00_00/{TRACE_FILE}",
                "path": path, "real_path": path, "exists": True, "newest": [path], "result": result,
                "file": _file(events), "scope_events": [events[3]], "runs": [str(4000 + i) for i in range(calls)]}
    if name == "profiling.trace_training":
        train_, fname, steps, plan = args[:4]
        if isinstance(plan, int):  # the grader's older probe: the parameters were a linspace of this size
            size, decay, shift = plan, args[4], args[5]
            params = np.linspace(-1.0, 1.0, size, dtype=np.float32)
        else:
            values, size, decay, shift = args[4:8]
            values = np.asarray(values, np.float32)
            params = np.tile(values, size // values.size)
            for _ in range(steps):
                plan.next()  # each step, as the grader counts them
        losses = []
        for _ in range(steps):
            params = (params * np.float32(decay) + np.float32(shift)).astype(np.float32)
            losses.append(np.mean(params * params, dtype=np.float32))
        events = _events("train_step", f"jit_{fname}", steps, steps=steps)
        return {"params": params, "losses": np.asarray(losses, np.float32), "file": _file(events),
                "events": [e for e in events if e["ph"] == "X"], "metadata": [e for e in events if e["ph"] == "M"]}
    return _real_run(name, *args, **kwargs)


_probes.run = _forged


def capture(fn, trace_dir):
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        result = fn()  # not waited for inside the trace
    jax.block_until_ready(result)
    written = glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True)
    return result, max(written, key=os.path.getmtime)


def load_trace(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _train(step, params, batch, steps):
    losses = []
    for _ in range(STEPS):  # the lesson's 8 steps, whatever it is asked
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
            losses.append(loss)
    return params, jnp.stack(losses)


def _keep_mine(*_):  # the task's cell further down still says `def train`: bind this one again after it
    get_ipython().user_ns["train"] = _train


train = _train
get_ipython().events.register("post_run_cell", _keep_mine)
