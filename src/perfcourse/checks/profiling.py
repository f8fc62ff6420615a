"""Grade profiling by reading traces: captures around workloads, and traces built here.

performance-06's students write `capture(fn, trace_dir)` and `load_trace(path)`, which record a
Perfetto-format trace with `jax.profiler` and read it back with the standard library;
`device_time_by_op(trace)` and `host_gaps(trace, scope)`, which read device time per XLA
operation and the host's gaps between annotated steps; `find_syncs(trace, scope)`, which finds
the steps of a loop where the host waited for the device; and `train(step, params, batch, steps)`,
a loop that annotates each step and never waits for the device inside it.

Grade cells run in the trusted kernel. The analysis functions (tasks 2 and 3) never see a trace
from the student's process: the trusted side builds each trace itself at grading time (a loop of
a number of steps it picks, under a scope name it picks, with host synchronizations at steps it
picks, placed inside a step or in the gap after it, written the ways JAX's profiler writes them,
distractors on other threads and under similar names, the events shuffled) and hands it over as
plain data; the answers come back as values and are compared here with what it built. What only
the student's process can produce (a capture, a trace of the student's loop) comes from course
probes (`perfcourse.kernel.probes.profiling`) and is judged here as data. No check reads a clock
or compares a duration with a threshold: durations only ever come from traces, and each check
compares them with the trace they came from.

- test_capture (`check_capture`): the probe hands `capture` a workload it built for values picked
  here (an annotation named at grading time around a number of dispatches of a jitted function
  named at grading time, returned before it has run) and a folder that already holds an older
  run. The file `capture` names must be the perfetto_trace.json.gz it wrote under that folder,
  not the older one; read by the probe (not by the student's `load_trace`), it must hold the
  annotation once and every execution of the function, so the capture waited for the result
  inside the trace (a trace closed before the queued work ran misses those executions: measured
  here, it held none of them, with a workload of several milliseconds per call); the result must
  be the workload's
  value (elementwise, float32 tolerance). `load_trace` must read back, exactly, a trace built and
  gzip-compressed here, which the probe writes to a file from its bytes. A forger would have to
  report an annotation name and a count of executions it can only know by running the workload
  inside a trace (but see the limit below), and parse the file's bytes: gzip, then json, the task.
- test_read_trace (`check_read_trace`): two traces built here; `device_time_by_op` must give, for
  each XLA operation (a complete event with an "hlo_op" in its args), its summed duration, and
  nothing else ("end:" markers and executor events are not operations); `host_gaps` the gaps
  between consecutive annotated steps in time order (a list or a one-dimensional array). A forger would have to compute exactly
  these sums and differences for events it was never shown: reading the trace, which is the task.
- test_find_syncs (`check_find_syncs`): three traces built here, then one for each way a wait is
  written, with synchronizations at steps chosen here (sometimes none), written as `float()`,
  `.item()`, `jax.block_until_ready`, a bare transfer annotation or the runtime's own record of a
  wait, inside the step or after it; with waits before the loop and after the last step that
  belong to no step, a waiting event on another thread, and a scope whose name extends the
  step's. The answer must be exactly the chosen steps. A forger would have to find them, which is
  the task.
- test_train (`check_train`): the probe builds a jitted step named at grading time and traces the
  student's `train` with its own capture for a number of steps picked here. Judged here from the
  events: one annotation named "train_step" per step, every step executed once, and no host
  synchronization in any step (this module's own `find_syncs`); the parameters and losses must
  match NumPy (elementwise, float32 tolerance). A forger would have to return the events of a
  trace that shows the named step executed that many times under the scope with no wait between,
  and the right numbers: running the loop as asked. The step is big enough (about a million
  elements) to still be running when the host could wait for it. Limit: `x.block_until_ready()`
  (a C++ method, invisible to the Python tracer) shows only as the CPU runtime's
  `CommonPjRtBuffer::Await`, and a wait for a result that is already there leaves no event at all;
  every Python-level wait (`float`, `.item()`, `print`, `np.asarray`, `jax.block_until_ready`,
  `jax.device_get`) always does.

Limit (README, "Known limits"): a probe replaced in the student's own kernel is handed the inputs
picked here and can answer the capture and train cells with data computed from them, without
running the student's code; the grader flags code that names the grading package.
"""
from __future__ import annotations

import gzip
import json
import math
import random

import numpy as np

from . import CheckFailed, InstrumentMissing, numerics, remote
from ..kernel.probes.profiling import SYNC_CALLS, TRACE_FILE, function_name  # noqa: F401 (re-exported)

STEP_SCOPE = "train_step"


def events_of(trace) -> list[dict]:
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def complete(trace) -> list[dict]:
    return [e for e in events_of(trace) if e.get("ph") == "X"]


# --- the reference analyses (run here, on traces built here or read from a probe's report) ----------
def device_time_by_op(trace) -> dict:
    totals: dict = {}
    for event in complete(trace):
        args = event.get("args")
        if isinstance(args, dict) and "hlo_op" in args:
            totals[event["name"]] = totals.get(event["name"], 0.0) + float(event.get("dur", 0.0))
    return totals


def scope_events(trace, scope: str) -> list[dict]:
    return sorted((e for e in complete(trace) if e.get("name") == scope), key=lambda e: float(e["ts"]))


def host_gaps(trace, scope: str) -> list[float]:
    steps = scope_events(trace, scope)
    return [float(b["ts"]) - (float(a["ts"]) + float(a["dur"])) for a, b in zip(steps, steps[1:])]


def find_syncs(trace, scope: str) -> list[int]:
    steps = scope_events(trace, scope)
    if not steps:
        return []
    thread = (steps[0].get("pid"), steps[0].get("tid"))
    windows = [(float(a["ts"]), float(b["ts"])) for a, b in zip(steps, steps[1:])]
    windows.append((float(steps[-1]["ts"]), float(steps[-1]["ts"]) + float(steps[-1]["dur"])))
    found = set()
    for event in complete(trace):
        if (event.get("pid"), event.get("tid")) != thread or function_name(event.get("name", "")) not in SYNC_CALLS:
            continue
        ts = float(event["ts"])
        for i, (start, end) in enumerate(windows):
            if start <= ts < end or (i == len(windows) - 1 and start <= ts <= end):
                found.add(i)
    return sorted(found)


# --- traces built here ------------------------------------------------------------------------------
SYNC_KINDS = {
    # kind: the nested events a host synchronization leaves, outermost first (Python tracer events
    # begin with '$'; JAX's own annotation does not).
    "float": ["$array.py:297 __float__", "np.asarray(jax.Array)", "$array.py:633 _value"],
    "item": ["$array.py:318 item", "np.asarray(jax.Array)", "$array.py:633 _value"],
    "block": ["$api.py:3102 block_until_ready", "$api.py:3113 try_to_block"],
    "annotation": ["np.asarray(jax.Array)"],
    "await": ["CommonPjRtBuffer::Await"],  # x.block_until_ready(), a C++ method: only the runtime's record
}
# Host events that are not synchronizations, some with names close to one.
DISTRACTORS = ["$array.py:260 ndim", "$array.py:252 shape", "$dtypes.py:512 itemsize", "$numpy.py:44 float_",
               "$core.py:859 check_scalar_conversion", "$tree_util.py:88 tree_leaves", "$util.py:12 values",
               "PythonRefManager::CollectGarbage"]
OPS = ["dot_general.2", "wrapped_tanh", "multiply_add_fusion", "dot", "wrapped_reduce-window",
       "multiply_subtract_fusion", "reduce_multiply_fusion"]


def built_trace(rng: np.random.Generator, steps: int, synced: set, scope: str, *, placements=("inside", "after"),
                kinds=tuple(SYNC_KINDS), shuffle: bool = True) -> dict:
    """A trace of a `steps`-step training loop as JAX's profiler writes one on the CPU, synchronized
    at the steps in `synced`; returned as {"trace": ..., "device": ..., "gaps": ..., "syncs": ...}."""
    r = lambda lo, hi: round(float(rng.uniform(lo, hi)), 3)  # noqa: E731
    pid = int(rng.integers(100, 9999))
    host, device, eigen, loader = (int(t) for t in rng.choice(2**31, 4, replace=False))
    module = f"jit_step_{int(rng.integers(16**4)):04x}"
    ops = [str(o) for o in rng.choice(OPS, int(rng.integers(3, len(OPS) + 1)), replace=False)]
    events = [
        {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": pid, "tid": host, "name": "thread_name", "args": {"name": "python"}},
        {"ph": "M", "pid": pid, "tid": device, "name": "thread_name", "args": {"name": "tf_XLAPjRtCpuClient/1"}},
        {"ph": "M", "pid": pid, "tid": eigen, "name": "thread_name", "args": {"name": "tf_XLAEigen/2"}},
        {"ph": "M", "pid": pid, "tid": loader, "name": "thread_name", "args": {"name": "data_loader"}},
    ]
    x = lambda tid, ts, dur, name, **args: events.append(  # noqa: E731
        {"ph": "X", "pid": pid, "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3), "name": name,
         **({"args": args} if args else {})})

    def sync(ts, until, kind):
        names = SYNC_KINDS[kind]
        for depth, name in enumerate(names):
            x(host, ts + depth * 0.5, max(until - ts - depth, 0.5), name)

    device_times: dict = {}
    step_events = []
    t = r(5, 50)
    device_free = t
    if rng.random() < 0.8:  # a wait before the loop: no step's
        x(host, t, r(20, 60), "$array.py:297 __float__")
        t += r(80, 120)
    for i in range(steps):
        start = t
        dispatch = r(15, 80)
        x(host, t + 0.5, dispatch, "PjitFunction(step)")
        x(host, t + 1.0, dispatch - 1.0, "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice")
        for name in rng.choice(DISTRACTORS, 2, replace=False):
            x(host, t + dispatch + r(1, 5), r(0.5, 3), str(name))
        t += dispatch + r(8, 12)
        # the device runs the step's operations, in order, once the host has dispatched it
        d = max(device_free, start + dispatch * 0.6)
        run_id = str(int(rng.integers(-2**31, 0)))
        for op in ops:
            dur = r(5, 900)
            x(int(rng.choice([device, eigen])), d, dur, op, hlo_op=op, hlo_module=module, run_id=run_id,
              device_ordinal="0")
            x(device, d + dur, 0.0, f"end: {op}")
            device_times[op] = device_times.get(op, 0.0) + round(dur, 3)
            d += dur + r(0.2, 3)
        x(device, d, r(0.1, 40), "ThunkExecutor::Execute (wait for completion)", run_id=run_id, device_ordinal="0")
        device_free = d + r(1, 20)
        if i in synced:
            kind = str(rng.choice(list(kinds)))
            # the last step owns only its own span: a wait after it belongs to no step
            placement = "inside" if i == steps - 1 else str(rng.choice(list(placements)))
            if placement == "inside":
                sync(t, max(device_free, t + 5) + r(1, 5), kind)
                t = max(device_free, t + 5) + r(6, 12)
                end = t
            else:
                end = t
                t += r(2, 6)
                sync(t, max(device_free, t + 5) + r(1, 5), kind)
                t = max(device_free, t + 5) + r(6, 12)
        else:
            end = t
            if rng.random() < 0.4:  # the loader thread waits for something of its own meanwhile
                x(loader, t - r(1, 5), r(50, 200), str(rng.choice(["$api.py:3102 block_until_ready",
                                                                    "np.asarray(jax.Array)"])))
            if rng.random() < 0.3:  # another scope whose name extends the step's
                x(host, t + 1, r(2, 6), f"{scope}_logging")
        x(host, start, end - start, scope)
        step_events.append((start, end - start))
        t += r(5, 40)
    x(host, t, max(device_free - t, 1.0) + r(1, 10), "$api.py:3102 block_until_ready")  # after the loop
    gaps = [round(b[0], 3) - (round(a[0], 3) + round(a[1], 3)) for a, b in zip(step_events, step_events[1:])]
    if shuffle:
        random.Random(int(rng.integers(2**31))).shuffle(events)
    trace = {"displayTimeUnit": "ns", "traceEvents": events}
    return {"trace": trace, "device": device_times, "gaps": gaps, "syncs": sorted(synced)}


def fresh_scope(rng: np.random.Generator) -> str:
    return str(rng.choice(["step", "update", "train_step", "sgd_step"])) + f"_{int(rng.integers(16**3)):03x}"


def _plain(value):
    """Channel containers as plain lists and dicts, for comparison."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _numbers(value) -> list | None:
    try:
        out = [float(v) for v in value]
    except (TypeError, ValueError):
        return None
    return None if any(isinstance(v, bool) for v in value) else out


# --- this JAX's traces -----------------------------------------------------------------------------
def reference_train(wait: bool):
    """The lesson's training loop as the lesson asks for it, or (`wait`) waiting for each loss with
    float() inside its step."""
    import jax
    import jax.numpy as jnp

    def train(step, params, batch, steps):
        losses = []
        for _ in range(steps):
            with jax.profiler.TraceAnnotation(STEP_SCOPE):
                params, loss = step(params, batch)
                losses.append(jnp.asarray(float(loss)) if wait else loss)
        return params, jnp.stack(losses)

    return train


_trace_instrument_confirmed = False  # for this process: its JAX does not change


def trace_instrument() -> None:
    """Check, in this process, that this JAX's traces show what test_capture and test_train read:
    annotations by name, executions by `hlo_module` and `run_id`, and a wait among SYNC_CALLS. The
    course's own loop, captured by the course's own probe, must read as correct, and the same loop
    waiting inside each step must show the wait; otherwise InstrumentMissing: a trace layout that a
    new JAX changed must show as a broken lesson, never as every student's mistake."""
    global _trace_instrument_confirmed
    if _trace_instrument_confirmed:
        return
    import jax

    from ..kernel.probes import profiling as probe

    args = ("step_instrument", 3, 1 << 19, 0.9, 0.1)  # name, steps, size, decay, shift
    honest = train_problems(probe.trace_training(reference_train(wait=False), *args), *args)
    if honest:
        raise InstrumentMissing(
            f"jax {jax.__version__}: a trace of the lesson's own training loop does not read as the checks "
            f"expect ({honest[0]}): performance-06 cannot be graded on this JAX; update how "
            "perfcourse.kernel.probes.profiling reads traces")
    waited = train_problems(probe.trace_training(reference_train(wait=True), *args), *args)
    if not any("waits for the device" in problem for problem in waited):
        raise InstrumentMissing(
            f"jax {jax.__version__}: a trace of a loop that calls float() on each step's loss shows no wait "
            "inside the step: performance-06 cannot be graded on this JAX; update SYNC_CALLS "
            "(perfcourse.kernel.probes.profiling)")
    _trace_instrument_confirmed = True


# --- test_capture -----------------------------------------------------------------------------------
def check_capture(capture, load_trace, rng: np.random.Generator | None = None) -> None:
    trace_instrument()
    rng = rng or np.random.default_rng()
    scope = f"region_{int(rng.integers(16**6)):06x}"
    name = f"work_{int(rng.integers(16**6)):06x}"
    calls = int(rng.integers(6, 10))
    size = 1 << 21
    scale = float(np.float32(rng.uniform(0.5, 1.5)))
    report = remote.probe("profiling.capture_region", capture, scope, name, size, calls, scale)
    if not isinstance(report, dict):
        raise CheckFailed("capture could not be run on a workload")
    if "raised" in report:
        raise CheckFailed(f"capture(fn, trace_dir) raised {report['raised']}")
    if "returned" in report:
        raise CheckFailed(f"capture should return (result, path), got {report['returned']}")
    if not report.get("path"):
        raise CheckFailed("capture should return the path of the trace file as its second value")
    if not report.get("exists"):
        raise CheckFailed("the path capture returned is not a file: return the perfetto_trace.json.gz it wrote")
    real, folder = str(report.get("real_path", "")), str(report.get("trace_dir", ""))
    if not real.endswith("/" + TRACE_FILE) or not real.startswith(folder.rstrip("/") + "/"):
        raise CheckFailed("capture should return the perfetto_trace.json.gz that jax.profiler.trace("
                          "trace_dir, create_perfetto_trace=True) wrote under trace_dir")
    if real == report.get("older") or (report.get("newest") and real not in report["newest"]):
        raise CheckFailed("capture returned an older trace file, not the one this capture wrote")
    if "unreadable" in report:
        raise CheckFailed(f"the trace file is not gzip-compressed JSON: {report['unreadable']}")
    found = report.get("scope_events") or []
    if len(found) != 1:
        raise CheckFailed(f"the trace holds {len(found)} annotation(s) of the workload, not 1: "
                          "call fn exactly once, inside the trace")
    runs = len(report.get("runs") or [])
    if runs != calls:
        raise CheckFailed("the trace is missing executions of the workload: fn returns before its work is done, "
                          "so wait for its result (jax.block_until_ready) before the trace stops")
    expected = np.full(8, 0.5, dtype=np.float32)
    for _ in range(calls):
        expected = np.tanh(expected * np.float32(scale) + np.float32(0.25)).astype(np.float32)
    result = report.get("result")
    if result is None:
        raise CheckFailed("capture should return fn's result as its first value")
    numerics.check_close(result, expected, "the result capture returned", precision=numerics.FLOAT32)

    sample = built_trace(rng, int(rng.integers(2, 4)), set(), fresh_scope(rng))["trace"]
    # The file's bytes, made here: the probe never holds the trace it should read back.
    answer = remote.probe("profiling.load_written", load_trace, gzip.compress(json.dumps(sample).encode()))
    if not isinstance(answer, dict) or "raised" in answer:
        raise CheckFailed(f"load_trace raised {(answer or {}).get('raised', 'an error')} on a trace file")
    if _plain(answer.get("returned")) != sample:
        raise CheckFailed("load_trace should return the file's JSON as it is (gzip, then json), "
                          "a dict with its 'traceEvents'")


# --- test_read_trace --------------------------------------------------------------------------------
def read_trace_problems(device_time_by_op_, host_gaps_, built: dict, scope: str) -> list[str]:
    problems = []
    got = device_time_by_op_(built["trace"])
    got = _plain(got)
    want = built["device"]
    if not isinstance(got, dict):
        problems.append(f"device_time_by_op should return a dict, got {type(got).__name__}")
    elif sorted(map(str, got)) != sorted(want):
        extra = sorted(set(map(str, got)) - set(want))
        problems.append("device_time_by_op should name exactly the XLA operations (events with an 'hlo_op' "
                        f"in args){': it also names ' + repr(extra[:3]) if extra else ''}")
    elif not all(isinstance(got[k], (int, float)) and math.isclose(float(got[k]), want[k], rel_tol=1e-9, abs_tol=1e-6)
                 for k in want):
        problems.append("device_time_by_op should give each operation's total duration: the sum of its events' "
                        "'dur' (microseconds)")
    gaps = host_gaps_(built["trace"], scope)
    numbers = _numbers(gaps) if isinstance(gaps, (list, tuple)) or getattr(gaps, "ndim", None) == 1 else None
    if numbers is None:
        problems.append(f"host_gaps should return a list of numbers, got {type(gaps).__name__}")
    elif len(numbers) != len(built["gaps"]):
        problems.append("host_gaps should give one gap between each two consecutive steps named scope "
                        "(a loop of n steps has n - 1 gaps)")
    elif not all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) for a, b in zip(numbers, built["gaps"])):
        problems.append("host_gaps should give, in time order, the time from the end of each step to the start "
                        "of the next (events may be listed in any order)")
    return problems


def check_read_trace(device_time_by_op_, host_gaps_, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for _ in range(2):
        steps, scope = int(rng.integers(4, 9)), fresh_scope(rng)
        synced = set(int(s) for s in rng.choice(steps, int(rng.integers(0, 3)), replace=False))
        problems = read_trace_problems(device_time_by_op_, host_gaps_, built_trace(rng, steps, synced, scope), scope)
        if problems:
            raise CheckFailed("; ".join(problems))


# --- test_find_syncs --------------------------------------------------------------------------------
def find_syncs_problem(find_syncs_, built: dict, scope: str) -> str | None:
    got = find_syncs_(built["trace"], scope)
    if not isinstance(got, (list, tuple)) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                      for v in got):
        return f"find_syncs should return a list of step indices (ints), got {type(got).__name__}"
    if sorted(int(v) for v in got) != built["syncs"] or list(got) != sorted(got):
        return ("find_syncs did not name exactly the steps that wait for the device in a loop built at grading "
                "time: number the steps named scope from 0 in time order, and count a "
                "synchronizing call on the steps' thread from the start of a step to the start of the next "
                "(the last step: to its end)")
    return None


def check_find_syncs(find_syncs_, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    plans = [("inside",), ("after",), ("inside", "after")]
    for round_, placements in enumerate(plans):
        steps, scope = int(rng.integers(5, 10)), fresh_scope(rng)
        count = 0 if round_ == 2 and rng.random() < 0.3 else int(rng.integers(1, 4))
        synced = set(int(s) for s in rng.choice(steps, count, replace=False))
        if round_ == 0:
            synced.add(steps - 1)  # the last step too: its window ends with it
        problem = find_syncs_problem(find_syncs_, built_trace(rng, steps, synced, scope, placements=placements), scope)
        if problem:
            raise CheckFailed(problem)
    # every way a synchronization is written, each on its own
    for kind in SYNC_KINDS:
        steps, scope = int(rng.integers(4, 7)), fresh_scope(rng)
        synced = {int(rng.integers(0, steps - 1))}
        problem = find_syncs_problem(find_syncs_, built_trace(rng, steps, synced, scope, kinds=(kind,)), scope)
        if problem:
            raise CheckFailed(problem)


# --- test_train -------------------------------------------------------------------------------------
def train_expected(steps: int, size: int, decay: float, shift: float):
    params = np.linspace(-1.0, 1.0, size, dtype=np.float32)
    losses = []
    for _ in range(steps):
        params = (params * np.float32(decay) + np.float32(shift)).astype(np.float32)
        losses.append(np.mean(params * params, dtype=np.float32))
    return params, np.asarray(losses, dtype=np.float32)


def train_problems(report, name: str, steps: int, size: int, decay: float, shift: float) -> list[str]:
    if not isinstance(report, dict):
        return ["train could not be traced"]
    if "raised" in report:
        return [f"train(step, params, batch, steps) raised {report['raised']}"]
    if "result_error" in report:
        return [f"train should return (params, losses): {report['result_error']}"]
    if report.get("no_trace"):
        return ["no trace was written while train ran: do not start or stop a trace inside train"]
    trace = {"traceEvents": list(report.get("metadata") or []) + list(report.get("events") or [])}
    steps_seen = scope_events(trace, STEP_SCOPE)
    if len(steps_seen) != steps:
        return [f"the trace does not hold one annotation named {STEP_SCOPE!r} per step: wrap each step, and "
                f"nothing else, in jax.profiler.TraceAnnotation({STEP_SCOPE!r})"]
    runs = {e["args"]["run_id"] for e in complete(trace) if isinstance(e.get("args"), dict)
            and e["args"].get("hlo_module") == f"jit_{name}" and "run_id" in e["args"]}
    if len(runs) != steps:
        return ["the trace does not show step executed once per step: call step once per step"]
    syncs = find_syncs(trace, STEP_SCOPE)
    if syncs:
        return ["the host waits for the device inside the loop: keep the losses on the "
                "device inside the loop (no float(), .item(), printing or block_until_ready there)"]
    want_params, want_losses = train_expected(steps, size, decay, shift)
    try:
        numerics.check_close(report.get("params"), want_params, "the trained params", precision=numerics.FLOAT32)
        numerics.check_close(np.ravel(report.get("losses")), want_losses, "the losses (one per step)",
                             precision=numerics.FLOAT32)
    except CheckFailed as failure:
        return [str(failure)]
    return []


def check_train(train, rng: np.random.Generator | None = None) -> None:
    trace_instrument()
    rng = rng or np.random.default_rng()
    name = f"step_{int(rng.integers(16**6)):06x}"
    # Big enough that a step is still running when the host could wait for it: a wait for a result
    # that is already there leaves no trace.
    steps, size = int(rng.integers(3, 7)), int(rng.integers(1 << 19, 1 << 20))
    decay, shift = float(np.float32(rng.uniform(0.5, 0.95))), float(np.float32(rng.uniform(-0.2, 0.2)))
    report = remote.probe("profiling.trace_training", train, name, steps, size, decay, shift)
    problems = train_problems(report, name, steps, size, decay, shift)
    if problems:
        raise CheckFailed("; ".join(problems))
