"""performance-06's probes, run in the student's process: what a profiler trace recorded.

- `capture_region(capture, scope, name, size, calls, scale, trace_dir)` builds a workload *here*
  for values picked on the trusted side: a jitted elementwise function called `name` (so its
  compiled module is `jit_<name>`), dispatched `calls` times inside a `TraceAnnotation(scope)`
  and returned without waiting for it. It puts an older run's trace file in a fresh folder, hands
  the workload and the folder to the student's `capture(fn, trace_dir)`, then reads the file the
  student's function named with the standard
  library (never with the student's `load_trace`) and describes it as plain data: where the file
  is, the annotations named `scope`, the distinct executions of `jit_<name>`, and the result.
- `load_written(load_trace, data, trace_dir)` writes the bytes of a gzip-compressed JSON trace
  file made on the trusted side here and returns what the student's `load_trace` read from it
  (the probe is handed the file's bytes, not the trace: answering without reading them would
  take decompressing and parsing them, which is the task).
- `trace_training(train, name, steps, size, decay, shift, scope, trace_dir)` builds a jitted step
  `step(params, batch) -> (params, loss)` called `name`, captures a trace of the student's
  `train(step, params, batch, steps)` with `jax.profiler` (the probe's own capture, not the
  student's), waits for the result inside it, and returns the trace's complete events as plain
  data with the result (the Python tracer's calls left out, except the waiting ones: a trace of a
  loop that compiles holds thousands of them).

Nothing here judges: the trusted side (`perfcourse.checks.profiling`) reads the events and the
numbers and decides.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import shutil
import tempfile

PROBES = ("capture_region", "load_written", "trace_training")
TRACE_FILE = "perfetto_trace.json.gz"
# Calls that make the host wait for a device result, as the profiler names them: a Python-level
# event "$file.py:LINE function" (the Python tracer), JAX's own annotation of a transfer, or the CPU
# runtime's record of a wait for a buffer (Array.block_until_ready is C++, which the Python tracer
# does not see).
SYNC_CALLS = ("__float__", "__int__", "__bool__", "__index__", "item", "tolist", "__array__", "_value",
              "block_until_ready", "device_get", "np.asarray(jax.Array)", "CommonPjRtBuffer::Await")


def function_name(name: str) -> str:
    """'$array.py:297 __float__' -> '__float__'; any other event name as it is."""
    name = str(name)
    return name.rsplit(" ", 1)[-1] if name.startswith("$") else name


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def read_trace_file(path: str):
    """The trace file, parsed with the standard library."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def events_of(trace) -> list:
    """The trace's events: the "traceEvents" list of a trace object, or a bare list of events."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def complete_events(trace, python_calls: bool = True) -> list[dict]:
    """Every complete ("X") event as plain data: name, pid, tid, ts, dur and the HLO names in args.

    Without `python_calls`, the Python tracer's events ('$file.py:LINE function') are left out
    except those of SYNC_CALLS: a trace of a loop that compiles holds thousands of them."""
    found = []
    for event in events_of(trace):
        if event.get("ph") != "X":
            continue
        name = str(event.get("name", ""))
        if not python_calls and name.startswith("$") and function_name(name) not in SYNC_CALLS:
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        item = {"ph": "X", "name": name, "pid": event.get("pid"), "tid": event.get("tid"),
                "ts": float(event.get("ts", 0.0)), "dur": float(event.get("dur", 0.0))}
        plain = {key: str(args[key]) for key in ("hlo_op", "hlo_module", "run_id") if key in args}
        if plain:
            item["args"] = plain
        found.append(item)
    return found


def metadata_events(trace) -> list[dict]:
    """The process and thread names ("M" events) as plain data."""
    found = []
    for event in events_of(trace):
        if event.get("ph") == "M" and event.get("name") in ("process_name", "thread_name"):
            args = event.get("args") if isinstance(event.get("args"), dict) else {}
            found.append({"ph": "M", "name": event["name"], "pid": event.get("pid"), "tid": event.get("tid"),
                          "args": {"name": str(args.get("name", ""))}})
    return found


def _elementwise(name: str):
    import jax
    import jax.numpy as jnp

    def workload(a, scale):
        return jnp.tanh(a * scale + 0.25)

    workload.__name__ = workload.__qualname__ = name
    return jax.jit(workload)


def _capture_region(capture, scope: str, name: str, size: int, calls: int, scale: float, trace_dir):
    """The student's capture(fn, trace_dir) around a workload that returns before it has run."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    work = _elementwise(name)
    start = jnp.full((int(size),), 0.5, dtype=jnp.float32)
    jax.block_until_ready(work(start, np.float32(scale)))  # compiled before the trace

    def fn():
        with jax.profiler.TraceAnnotation(scope):
            out = start
            for _ in range(int(calls)):
                out = work(out, np.float32(scale))
        return out  # not waited for: the capture must wait for it inside the trace

    # An older run already in the folder, as after an earlier capture: the capture must name its own.
    older = os.path.join(trace_dir, "plugins", "profile", "2000_01_01_00_00_00", TRACE_FILE)
    os.makedirs(os.path.dirname(older), exist_ok=True)
    with gzip.open(older, "wt", encoding="utf-8") as handle:
        json.dump({"displayTimeUnit": "ns", "traceEvents": []}, handle)
    os.utime(older, (946684800, 946684800))
    report = {"trace_dir": os.path.realpath(trace_dir), "older": os.path.realpath(older)}
    try:
        returned = capture(fn, trace_dir)
    except Exception as exc:
        report["raised"] = _error(exc)
        return report
    if not isinstance(returned, tuple) or len(returned) != 2:
        report["returned"] = type(returned).__name__
        return report
    result, path = returned
    report["result"] = np.asarray(jax.block_until_ready(result))[:8] if hasattr(result, "shape") else None
    report["path"] = str(path) if isinstance(path, (str, os.PathLike)) else None
    if report["path"] is None:
        return report
    report["real_path"] = os.path.realpath(report["path"])
    report["exists"] = os.path.isfile(report["path"])
    report["newest"] = sorted(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True),
                              key=os.path.getmtime)[-1:]
    report["newest"] = [os.path.realpath(p) for p in report["newest"]]
    if not report["exists"]:
        return report
    try:
        trace = read_trace_file(report["path"])
    except Exception as exc:
        report["unreadable"] = _error(exc)
        return report
    events = complete_events(trace, python_calls=False)
    report["scope_events"] = [e for e in events if e["name"] == scope]
    report["runs"] = sorted({e["args"]["run_id"] for e in events
                             if e.get("args", {}).get("hlo_module") == f"jit_{name}" and "run_id" in e["args"]})
    report["events"] = len(events)
    return report


def _load_written(load_trace, data: bytes, trace_dir):
    """Write `data` (a gzip-compressed JSON trace) as a file here; what the student's load_trace reads back."""
    path = os.path.join(trace_dir, TRACE_FILE)
    with open(path, "wb") as handle:
        handle.write(bytes(data))
    try:
        return {"returned": load_trace(path)}
    except Exception as exc:
        return {"raised": _error(exc)}


def _train_step(name: str):
    import jax
    import jax.numpy as jnp

    def step(params, batch):
        # One elementwise update (no matrix product: float32 on every backend) and its loss.
        decay, shift = batch
        new = params * decay + shift
        return new, jnp.mean(new * new)

    step.__name__ = step.__qualname__ = name
    return jax.jit(step)


def _trace_training(train, name: str, steps: int, size: int, decay: float, shift: float, trace_dir):
    """The student's train(step, params, batch, steps) under the probe's own trace, as plain data."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    step = _train_step(name)
    params = jnp.linspace(-1.0, 1.0, int(size), dtype=jnp.float32)
    batch = (jnp.float32(decay), jnp.float32(shift))
    jax.block_until_ready(step(params, batch))  # compiled before the trace
    report = {}
    try:
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            out = train(step, params, batch, int(steps))
            jax.block_until_ready(out)
    except Exception as exc:
        report["raised"] = _error(exc)
        return report
    try:
        new_params, losses = out
        report["params"] = np.asarray(new_params, dtype=np.float32)
        report["losses"] = np.asarray(losses, dtype=np.float32)
    except Exception as exc:
        report["result_error"] = _error(exc)
    paths = sorted(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True), key=os.path.getmtime)
    if not paths:
        report["no_trace"] = True
        return report
    trace = read_trace_file(paths[-1])
    report["events"] = complete_events(trace, python_calls=False)
    report["metadata"] = metadata_events(trace)
    return report


def _in_scratch(probe, trace_dir, *args):
    """Run `probe` with `trace_dir`, or with a folder of its own that is removed afterwards."""
    if trace_dir is not None:
        return probe(*args, trace_dir=trace_dir)
    folder = tempfile.mkdtemp(prefix="trace-")
    try:
        return probe(*args, trace_dir=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def capture_region(capture, scope: str, name: str, size: int, calls: int, scale: float, trace_dir=None):
    return _in_scratch(_capture_region, trace_dir, capture, scope, name, size, calls, scale)


def load_written(load_trace, data: bytes, trace_dir=None):
    return _in_scratch(_load_written, trace_dir, load_trace, data)


def trace_training(train, name: str, steps: int, size: int, decay: float, shift: float, trace_dir=None):
    return _in_scratch(_trace_training, trace_dir, train, name, steps, size, decay, shift)
