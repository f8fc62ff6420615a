"""Grade profiling by reading traces: captures around workloads, and traces built here.

performance-06's students write `capture(fn, trace_dir)` and `load_trace(path)`, which record a
Perfetto-format trace with `jax.profiler` and read it back with the standard library;
`device_time_by_op(trace)` and `host_gaps(trace, scope)`, which read device time per XLA
operation and the host's gaps between annotated steps; `find_syncs(trace, scope)`, which finds
the steps of a loop where the host waited for the device; `train(step, params, batch, steps)`,
a loop that annotates each step and never waits for the device inside it;
`device_seconds_per_call(trace, module)`, one program's device time per execution; and
`three_numbers(fn, *args, module, trace_dir, calls)`, the latency, throughput and device time of one
call, each measured its own way.

Grade cells run in the trusted kernel. The analysis functions (tasks 2 and 3) never see a trace
from the student's process: the trusted side builds each trace itself at grading time (a loop of
a number of steps it picks, under a scope name it picks, with host synchronizations at steps it
picks, placed inside a step or in the gap after it, written the ways JAX's profiler writes them,
distractors on other threads and under similar names, the events shuffled) and hands it over as
plain data; the answers come back as values and are compared here with what it built. What only
the student's process can produce (a capture, a trace of the student's loop) comes from course
probes (`perfcourse.kernel.probes.profiling`): they send back the trace file's *bytes*, which this
kernel decompresses and parses itself (gzip and json of the standard library, bounded), and the
dispatches inside it are paced by this kernel's own `Plan`. No check compares a duration with a
threshold of its own: durations only ever come from traces, checked against the pauses made here.
Per cell:

- test_capture (`check_capture`), *verified*, with *evidence* beyond: the probe hands `capture` a
  workload it built for values picked here (an annotation named at grading time around the
  dispatches of a jitted function named at grading time, on arrays holding values sent from here,
  returned before it has run) and a fresh folder, named here, that already holds an older run.
  The workload asks this kernel's `Plan` before each dispatch: the count is revealed one dispatch
  at a time and counted here (*observed*), and the first two dispatches wait for pauses whose
  lengths are drawn here and never told. The file `capture` names must be the
  perfetto_trace.json.gz it wrote under that folder, not the older one (paths: *evidence*, the
  student's kernel reports them). Its bytes, parsed here, must hold the annotation once and every
  execution counted here (`executions` of `jit_<name>`: distinct run ids, read from the CPU
  runtime's operations or a device's "XLA Modules" line), each starting no earlier than the
  annotation's start plus the pauses made before its dispatch, one after another (a trace closed
  before the queued work ran misses the last executions; measured here, with a few milliseconds of
  work per call, it held none of them); the result must be the workload's value (NumPy on the
  values sent from here, float32 tolerance). `load_trace` must read back, exactly, a trace built
  and gzip-compressed here, which the probe writes to a file from its bytes (*values only*). A
  probe replaced in the student's kernel can ask the plan for the count and write a well-formed
  file of names and run ids, but not the executions' times: a file made up without living through
  the pauses is refused. *Evidence only* beyond that: a file is data the student's process writes,
  and a program that times its own calls into the plan and writes every event a real trace has at
  those times (an emulation of the profiler) cannot be told from the profiler's file here.
- test_read_trace (`check_read_trace`), *values only*: two traces built here, one laid out as the
  CPU runtime writes a trace and one as a TPU does (in an order drawn here); `device_time_by_op`
  must give, for each XLA operation, its summed duration, and nothing else. An operation is a
  complete event with an "hlo_op" in its args (the CPU runtime's; "end:" markers and executor
  events are not operations) or an event on the "XLA Ops" line of a "/device:" process (a TPU's,
  which writes no "hlo_op"; its "XLA Modules", "Steps", counter and "Async XLA Ops" lines, the last
  holding copies in flight under their operations' names, are not operations), as
  the lesson teaches: a reader of "hlo_op" alone loses the cell. `host_gaps`
  the gaps between consecutive annotated steps in time order (a list or a one-dimensional array).
  A forger would have to compute exactly these sums and differences for events it was never shown:
  reading the trace, which is the task.
- test_find_syncs (`check_find_syncs`), *values only*: three traces built here, then one for each
  way a wait is written, with synchronizations at steps chosen here (sometimes none), written as
  `float()`, `.item()`, `jax.block_until_ready`, a bare transfer annotation or the runtime's own
  record of a wait, inside the step or after it; with waits before the loop and after the last step
  that belong to no step, a waiting event on another thread, and a scope whose name extends the
  step's. The answer must be exactly the chosen steps. A forger would have to find them, which is
  the task.
- test_train (`check_train`), *observed and verified*, with *evidence* beyond: the probe builds a
  jitted step named at grading time, which asks this kernel's `Plan` before each dispatch (so the
  steps the student's loop takes are counted here, and some wait for pauses drawn here), and
  traces the student's `train` with its own capture for a number of steps picked here, from
  parameters sent from here. Judged here, from the file's bytes parsed here: one annotation named
  "train_step" per step, `step` called once per step (counted here), every step executed once and
  no earlier than its step's start plus the pause made before its dispatch, and no host
  synchronization in any step (this module's own `find_syncs`); the parameters and losses must
  match NumPy on the values sent from here (float32 tolerance); that the losses came back as one
  array on the device, not a list, is the probe's word (*evidence*, and a report without it fails). The
  step is big enough (about a
  million elements) to still be running when the host could wait for it. The same *evidence*
  limit as test_capture: a made-up file that does not follow the pauses is refused; an emulation
  of the profiler that times its own calls is not told apart. Limit of the instrument:
  `x.block_until_ready()` (a C++ method, invisible to the Python tracer) shows only as the CPU
  runtime's `CommonPjRtBuffer::Await`, and a wait for a result that is already there leaves no
  event at all; every Python-level wait (`float`, `.item()`, `print`, `np.asarray`,
  `jax.block_until_ready`, `jax.device_get`) always does.
- test_device_time (`check_device_time`), *values only*: four traces built here, two laid out as a
  CPU writes them and two as a TPU does (`built_program_trace`): the executions of a module named
  here among those of a program whose name extends it and of another, each of theirs longer than any
  of the module's, with the host's launch events named after each module, the CPU runtime's "wait
  for completion" event carrying each run id, and the chip's Steps line. The answer must be the
  exact median of the module's executions' device times, in seconds (a CPU's: first operation's
  start to last operation's end, by run_id; a TPU's: the XLA Modules event). A forger would have to
  find those executions, which is the task.
- test_three_numbers (`check_three_numbers`), *observed and verified*: the probe hands the
  student's function an instrument (`Calls`: checks/timing.py's `Schedule`) whose every call this
  kernel holds for a time drawn here (wall time, no CPU) and then sizes with device work drawn here
  and calibrated here, about half the hold, so latency (hold + work), throughput (the hold) and
  device time (the work) stand apart by more than half the work. Judged here: the calls counted
  (one first call and three runs of `calls`) and timed on this kernel's clock, to the function's
  return (the probe says when, before it reads the file); the trace file's bytes, parsed here, must
  hold exactly `calls` executions of the module, the k-th at least k + 1 holds after the trace
  began; the device figure within 15% of that trace's median execution (or of their mean: which one
  is the device-time cell's to judge), the synchronous calls' work 1.7 to 2 times the traced calls'
  and the last traced call's a quarter of theirs, so the wall clock's versions (a latency less a
  queued call's return, the wait after the last traced call) miss both; each traced call is held
  here again once the probe says its program is dispatched (`Calls.dispatched`), for longer than its
  work and for a time drawn per call (`AFTER_DISPATCH`), so the wait left once a traced call comes
  back, even with every traced call waited for on its own, is near nothing, not its work; the latency at least a hold
  and half the work (each call waited for; one synchronous call is neither held nor given work, so
  the fastest sample falls short of it) and no more than half a hold and a work above the median of
  the synchronous calls' spans (one of them held a call's worth per call longer: a mean is that far
  above); the
  throughput at least a hold, its run no longer than this side saw the queued calls take (plus half
  the work), its calls not each waited for (their work alternates long and short: what a long
  queued call costs beyond its hold, as this side measured the hold, may not exceed what every
  short one costs by half the difference in work), the function returning only after the last one's
  work, and the throughput's own run as long as this side saw the queued calls up to the last
  one's hold and half the last one's work beyond that (its work is three calls' worth, long beside
  the channel's delays: a clock read before the wait falls short of it, even where freeing the
  unwaited results makes the function itself wait). Comparing calls within a run keeps the
  channel's own delays, milliseconds on a busy machine, out of the verdicts. A run whose work came
  out outside a quarter to four fifths of the hold, or in which this side saw the executions or one
  run's calls vary by more than half the work (another process stalled them), or whose long and
  short queued calls it could not tell apart, decides nothing and is run again (up to THREE_RUNS; a
  mistake seen in two disturbed runs or more is the function's; otherwise MachineBusy, which the
  grade report names: nothing was decided). *Evidence only*: the file is data the student's process writes, as for
  test_capture; an emulation of the profiler that times its own calls is not told apart.

`trace_instrument()` runs the course's own loop under the course's own probe in this kernel (with
a pause, honest and waiting) before grading: a JAX whose traces read otherwise stops the checks
with InstrumentMissing, never as every student's mistake.
"""
from __future__ import annotations

import gzip
import json
import math
import time

import numpy as np

from . import CheckFailed, InstrumentMissing, MachineBusy, numerics, remote
from ..kernel.probes.profiling import SYNC_CALLS, TRACE_FILE, function_name  # noqa: F401 (re-exported)
from .student_calls import counts, numbers
from .trace_writer import HOST_PROCESS, TPU_PROCESS, TraceWriter
from .traces import (MODULES_LINE, OPS_LINE, TIMING_SLACK_US, at_least, clock_slack, complete, executions,
                     op_events, parse_trace_file, report_problem, returned_file_problem, scope_events, thread)

STEP_SCOPE = "train_step"


# --- the reference analyses (run here, on traces built here or read from a probe's report) ----------
# Where each runtime writes a device's work: see checks/traces.py and the lesson's "What is in a trace".
def device_time_by_op(trace) -> dict:
    totals: dict = {}
    for event in op_events(trace):
        totals[event["name"]] = totals.get(event["name"], 0.0) + float(event.get("dur", 0.0))
    return totals


def host_gaps(trace, scope: str) -> list[float]:
    steps = scope_events(trace, scope)
    return [float(b["ts"]) - (float(a["ts"]) + float(a["dur"])) for a, b in zip(steps, steps[1:])]


def find_syncs(trace, scope: str) -> list[int]:
    steps = scope_events(trace, scope)
    if not steps:
        return []
    steps_thread = thread(steps[0])
    windows = [(float(a["ts"]), float(b["ts"])) for a, b in zip(steps, steps[1:])]
    windows.append((float(steps[-1]["ts"]), float(steps[-1]["ts"]) + float(steps[-1]["dur"])))
    found = set()
    for event in complete(trace):
        if thread(event) != steps_thread or function_name(event.get("name", "")) not in SYNC_CALLS:
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
# Operations as a TPU names them (tests/data/tpu-v5e): its copies are operations too.
TPU_OPS = ["copy-start", "copy-start.1", "copy-done", "copy-done.1", "multiply_reduce_fusion", "fusion",
           "fusion.1", "reduce.3"]


LAYOUTS = ("cpu", "tpu")
TPU_LINES = {1: "Steps", 2: MODULES_LINE, 3: OPS_LINE, 4: "Async XLA Ops", 7: "TC Overlay", 124: "_counters_"}
TPU_CATEGORIES = {"copy-start": "copy-start", "copy-done": "copy-done", "fusion": "convolution fusion",
                  "reduce": "reduce", "dot": "convolution"}


def _tpu_op_args(rng: np.random.Generator, op: str, dur: float, step_name: str) -> dict:
    """The args a TPU writes on an operation of its "XLA Ops" line (no "hlo_op"; "tf_op" only on
    some)."""
    kind = next((k for k in TPU_CATEGORIES if k in op), "fusion")
    args = {"Time Scale Multiplier": "1", "bytes_accessed": str(int(rng.integers(1 << 10, 1 << 20))),
            "device_duration_ps": str(int(round(dur * 1e6))), "hlo_category": TPU_CATEGORIES[kind],
            "long_name": f"%{op} = f32[128,256]{{1,0:T(8,128)}} {kind}(f32[128,256]{{1,0:T(8,128)}} %p.1)",
            "model_flops": str(int(rng.integers(0, 1 << 24))), "shape_with_layout": "f32[128,256]{1,0:T(8,128)}"}
    if not kind.startswith("copy"):
        args["tf_op"] = f"jit({step_name})/jvp(forward)/dot_general:"
    return args


def _cpu_runtime_threads(writer: TraceWriter, pid: int, runtime: int, eigen: int) -> None:
    """The CPU runtime's two threads that run operations."""
    writer.thread(pid, runtime, "tf_XLAPjRtCpuClient/1")
    writer.thread(pid, eigen, "tf_XLAEigen/2")


def built_trace(rng: np.random.Generator, steps: int, synced: set, scope: str, *, placements=("inside", "after"),
                kinds=tuple(SYNC_KINDS), shuffle: bool = True, layout: str = "cpu") -> dict:
    """A trace of a `steps`-step training loop as JAX's profiler writes one, synchronized at the steps
    in `synced`; returned as {"trace": ..., "device": ..., "gaps": ..., "syncs": ...}.

    layout "cpu": one process, /host:CPU, whose runtime threads run the operations (args "hlo_op",
    "hlo_module", "run_id"), with "end:" markers and executor events that are not operations.
    layout "tpu": the host's process and a process "/device:TPU:0" whose lines "Steps", "XLA
    Modules" and "XLA Ops" hold the chip's steps, executions and operations (operations named as
    the operation, with "long_name" and no "hlo_op"), and a counter event, as jax 0.10.2 writes
    them on a TPU v5e (tests/data/tpu-v5e); and, on "Async XLA Ops" (empty in those recordings),
    each copy in flight from its start to its step's end, named as its copy-start: not an operation."""
    r = lambda lo, hi: round(float(rng.uniform(lo, hi)), 3)  # noqa: E731
    pid = int(rng.integers(100, 9999))
    host, device, eigen, loader = (int(t) for t in rng.choice(2**31, 4, replace=False))
    module = f"jit_step_{int(rng.integers(16**4)):04x}"
    tpu = layout == "tpu"
    ops = [str(o) for o in rng.choice(TPU_OPS if tpu else OPS, int(rng.integers(3, len(OPS) + 1)), replace=False)]
    writer = TraceWriter()
    writer.process(pid, HOST_PROCESS)
    writer.thread(pid, host, "python3" if tpu else "python")
    writer.thread(pid, loader, "data_loader")
    if tpu:
        chip = int(rng.integers(1, 99))
        while chip == pid:
            chip = int(rng.integers(1, 99))
        runtime = device  # the host's runtime thread that launches each execution
        writer.thread(pid, runtime, f"main/{runtime % 9999}")
        writer.process(chip, TPU_PROCESS, sort_index=chip)
        for tid, line in TPU_LINES.items():
            writer.thread(chip, tid, line, sort_index=tid)
        program, first_run = int(rng.integers(1, 2**62)), int(rng.integers(0, 99))
    else:
        _cpu_runtime_threads(writer, pid, device, eigen)

    def x(tid, ts, dur, name, on=None, **args):
        writer.complete(pid if on is None else on, tid, ts, dur, name, **args)

    def sync(ts, until, kind):
        names = SYNC_KINDS[kind]
        for depth, name in enumerate(names):
            x(host, ts + depth * 0.5, max(until - ts - depth, 0.5), name)

    device_times: dict = {}
    step_events = []
    t = r(5, 50)
    device_free = t
    if tpu:
        x(124, t, 1e-06, "VDD Core FW Throttle(%)", on=chip, **{"throttle %": "0"})
    if rng.random() < 0.8:  # a wait before the loop: no step's
        x(host, t, r(20, 60), "$array.py:297 __float__")
        t += r(80, 120)
    for i in range(steps):
        start = t
        dispatch = r(15, 80)
        x(host, t + 0.5, dispatch, "PjitFunction(step)")
        if tpu:
            x(host, t + 1.0, dispatch - 1.0, "PjRtCApiLoadedExecutable::Execute")
            x(runtime, t + 1.5, dispatch - 2.0, f"CommonPjRtLoadedExecutable::Execute ({module})")
        else:
            x(host, t + 1.0, dispatch - 1.0, "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice")
        for name in rng.choice(DISTRACTORS, 2, replace=False):
            x(host, t + dispatch + r(1, 5), r(0.5, 3), str(name))
        t += dispatch + r(8, 12)
        # the device runs the step's operations, in order, once the host has dispatched it
        d = max(device_free, start + dispatch * 0.6)
        begin = d
        run_id = str(first_run + i) if tpu else str(int(rng.integers(-2**31, 0)))
        issued = []  # the asynchronous copies started in this step: their spans on "Async XLA Ops"
        for op in ops:
            if tpu:
                dur = r(0.002, 40)
                x(3, d, dur, op, on=chip, **_tpu_op_args(rng, op, dur, "step"))
                if op.startswith("copy-start"):
                    issued.append((op, d))
            else:
                dur = r(5, 900)
                writer.cpu_operation(pid, int(rng.choice([device, eigen])), device, d, dur, op, module, run_id)
            device_times[op] = device_times.get(op, 0.0) + round(dur, 3)
            d += dur + r(0.002 if tpu else 0.2, 3)
        if tpu:  # the execution and the chip's step: lines of the device that are not operations
            for op, issued_at in issued:  # a copy in flight, from its start to the step's end: not an operation
                x(4, issued_at, d - issued_at, op, on=chip)
            writer.tpu_execution(chip, 2, begin, d - begin, module, program, run_id,
                                 device_duration_ps=str(int(round((d - begin) * 1e6))))
            x(1, begin, d - begin + r(1, 20), str(i), on=chip, device_duration_ps=str(int(round((d - begin) * 1e6))))
        else:
            writer.executor_wait(pid, device, d, r(0.1, 40), run_id)
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
    trace = writer.trace(int(rng.integers(2**31)) if shuffle else None)
    return {"trace": trace, "device": device_times, "gaps": gaps, "syncs": sorted(synced)}


def fresh_scope(rng: np.random.Generator) -> str:
    return str(rng.choice(["step", "update", "train_step", "sgd_step"])) + f"_{int(rng.integers(16**3)):03x}"


def plain(value):
    """Channel containers as plain lists and dicts, for comparison."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# --- what the trusted kernel observes and parses itself -------------------------------------------
class Plan:
    """The dispatches of a workload the student's code runs, told one at a time (`next()`), counted
    here, with pauses before some of them whose lengths are picked here and never told.

    The course's code in the student's kernel asks before each dispatch: capture's workload (True
    while `count` dispatches remain) and train's step (always True: the student's loop decides).
    Student code holds this object only as a stand-in that can call `next`; everything else is kept
    under underscore names, which never cross. Each pause falls between the step's or the
    annotation's start and the dispatch, so in a real trace the dispatched execution starts at
    least that long after it: a trace written without living through the pauses does not show that.
    """

    MAX_ASKED = 10_000

    def __init__(self, count: int | None, pauses: dict[int, float]):
        self._count, self._pauses = count, dict(pauses)
        self._asked = 0   # calls of next()
        self._given = 0   # dispatches allowed

    def next(self) -> bool:
        index = self._asked
        self._asked += 1
        if (self._count is not None and index >= self._count) or index >= self.MAX_ASKED:
            return False
        pause = self._pauses.get(index)
        if pause:
            time.sleep(pause)
        self._given += 1
        return True




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
    annotations by name, executions (`executions`: on a CPU by `hlo_module` and `run_id`, on a TPU
    by the device's "XLA Modules" line), each starting after the pause before its dispatch (the
    profiler's clock and this one agree, to `clock_slack`), and a wait among SYNC_CALLS. The
    course's own loop, captured by the course's own probe, must read as correct, and the same loop
    waiting inside each step must show the wait; otherwise InstrumentMissing: a trace layout that a
    new JAX changed must show as a broken lesson, never as every student's mistake."""
    global _trace_instrument_confirmed
    if _trace_instrument_confirmed:
        return
    import jax

    from ..kernel.probes import profiling as probe

    steps, size, decay, shift = 3, 1 << 19, 0.9, 0.1
    values = np.linspace(-1.0, 1.0, 1 << 10, dtype=np.float32)
    found = []
    for wait in (False, True):
        plan = Plan(None, {1: 0.004})
        report = probe.trace_training(reference_train(wait), "step_instrument", steps, plan, values, size, decay, shift)
        found.append(train_problems(report, "step_instrument", steps, plan, values, size, decay, shift))
    honest, waited = found
    if honest:
        raise InstrumentMissing(
            f"jax {jax.__version__}: a trace of the lesson's own training loop does not read as the checks "
            f"expect ({honest[0]}): performance-06 cannot be graded on this JAX; update how "
            "perfcourse.checks.profiling reads traces")
    if not any("waits for the device" in problem for problem in waited):
        raise InstrumentMissing(
            f"jax {jax.__version__}: a trace of a loop that calls float() on each step's loss shows no wait "
            "inside the step: performance-06 cannot be graded on this JAX; update SYNC_CALLS "
            "(perfcourse.kernel.probes.profiling)")
    _trace_instrument_confirmed = True


# --- test_capture -----------------------------------------------------------------------------------
def capture_problems(report, scope: str, name: str, plan: Plan, values, scale: float, offset: float) -> list[str]:
    """What is wrong with the capture the probe describes: the paths it gives, and the file's bytes,
    parsed here."""
    problem = report_problem(report, "capture could not be run on a workload",
                             raised="capture(fn, trace_dir) raised {}",
                             returned="capture should return (result, path), got {}")
    problem = problem or returned_file_problem(report, "capture", "this capture")
    if problem:
        return [problem]
    trace, why = parse_trace_file(report)
    if trace is None:
        return [why]
    found = scope_events(trace, scope)
    if len(found) != 1:
        return [f"the trace holds {len(found)} annotation(s) of the workload, not 1: "
                "call fn exactly once, inside the trace"]
    runs = executions(trace, f"jit_{name}")
    if len(runs) != plan._given:
        return ["the trace is missing executions of the workload: fn returns before its work is done, "
                "so wait for its result (jax.block_until_ready) before the trace stops"]
    began, waited = float(found[0]["ts"]), 0.0
    for index, (start, _) in enumerate(runs):
        waited += plan._pauses.get(index, 0.0)
        if not at_least(start, began, waited, clock_slack(trace)):
            return ["the trace does not show the workload's executions when they ran: return the file "
                    "jax.profiler wrote during this capture"]
    if any(after[0] < before[1] - TIMING_SLACK_US for before, after in zip(runs, runs[1:])):
        return ["the trace shows executions of the workload that overlap, which one after another cannot: "
                "return the file jax.profiler wrote during this capture"]
    expected = np.asarray(values, dtype=np.float32)
    for _ in range(plan._given):
        expected = np.tanh(expected * np.float32(scale) + np.float32(offset)).astype(np.float32)
    result = report.get("result")
    if result is None:
        return ["capture should return fn's result as its first value"]
    try:
        # tanh applied again and again: float32 with this backend's tanh (a TPU's is approximate).
        numerics.check_close(result, expected, "the result capture returned",
                             precision=numerics.elementwise_precision())
    except CheckFailed as failure:
        return [str(failure)]
    return []


def check_capture(capture, load_trace, rng: np.random.Generator | None = None) -> None:
    trace_instrument()
    rng = rng or np.random.default_rng()
    scope = f"region_{int(rng.integers(16**6)):06x}"
    name = f"work_{int(rng.integers(16**6)):06x}"
    # The dispatches: told one at a time; the first two after pauses picked here, the rest at once,
    # so several executions are still queued when fn returns.
    plan = Plan(int(rng.integers(6, 10)), {0: float(rng.uniform(0.004, 0.012)), 1: float(rng.uniform(0.004, 0.012))})
    values = rng.uniform(-1.0, 1.0, 8).astype(np.float32)
    scale, offset = float(np.float32(rng.uniform(0.5, 1.5))), float(np.float32(rng.uniform(-0.5, 0.5)))
    folder = f"capture-{int(rng.integers(16**8)):08x}"
    report = remote.probe("profiling.capture_region", capture, scope, name, 1 << 21, plan, values, scale, offset,
                          folder)
    problems = capture_problems(report, scope, name, plan, values, scale, offset)
    if problems:
        raise CheckFailed(problems[0])

    sample = built_trace(rng, int(rng.integers(2, 4)), set(), fresh_scope(rng))["trace"]
    # The file's bytes, made here: the probe never holds the trace it should read back.
    answer = remote.probe("profiling.load_written", load_trace, gzip.compress(json.dumps(sample).encode()))
    if not isinstance(answer, dict) or "raised" in answer:
        raise CheckFailed(f"load_trace raised {(answer or {}).get('raised', 'an error')} on a trace file")
    if plain(answer.get("returned")) != sample:
        raise CheckFailed("load_trace should return the file's JSON as it is (gzip, then json), "
                          "a dict with its 'traceEvents'")


# --- test_read_trace --------------------------------------------------------------------------------
def read_trace_problems(device_time_by_op_, host_gaps_, built: dict, scope: str) -> list[str]:
    problems = []
    got = device_time_by_op_(built["trace"])
    got = plain(got)
    want = built["device"]
    if not isinstance(got, dict):
        problems.append(f"device_time_by_op should return a dict, got {type(got).__name__}")
    elif sorted(map(str, got)) != sorted(want):
        extra = sorted(set(map(str, got)) - set(want))
        missing = sorted(set(want) - set(map(str, got)))
        problems.append("device_time_by_op should name exactly the XLA operations of a trace written on a "
                        f"{built.get('layout', 'cpu').upper()} (events with an 'hlo_op' in args, or on a device's "
                        "'XLA Ops' line)"
                        f"{': it also names ' + repr(extra[:3]) if extra else ''}"
                        f"{': it misses ' + repr(missing[:3]) if missing and not extra else ''}")
    elif not all(isinstance(got[k], (int, float)) and math.isclose(float(got[k]), want[k], rel_tol=1e-9, abs_tol=1e-6)
                 for k in want):
        problems.append("device_time_by_op should give each operation's total duration: the sum of its events' "
                        "'dur' (microseconds)")
    gaps = host_gaps_(built["trace"], scope)
    gap_seconds = numbers(gaps, finite=False)
    if gap_seconds is None:
        problems.append(f"host_gaps should return a list of numbers, got {type(gaps).__name__}")
    elif len(gap_seconds) != len(built["gaps"]):
        problems.append("host_gaps should give one gap between each two consecutive steps named scope "
                        "(a loop of n steps has n - 1 gaps)")
    elif not all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) for a, b in zip(gap_seconds, built["gaps"])):
        problems.append("host_gaps should give, in time order, the time from the end of each step to the start "
                        "of the next (events may be listed in any order)")
    return problems


def check_read_trace(device_time_by_op_, host_gaps_, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    # one trace as a CPU writes it and one as a TPU does, in an order drawn here
    for layout in rng.permutation(LAYOUTS):
        steps, scope = int(rng.integers(4, 9)), fresh_scope(rng)
        synced = set(int(s) for s in rng.choice(steps, int(rng.integers(0, 3)), replace=False))
        built = {**built_trace(rng, steps, synced, scope, layout=str(layout)), "layout": str(layout)}
        problems = read_trace_problems(device_time_by_op_, host_gaps_, built, scope)
        if problems:
            raise CheckFailed("; ".join(problems))


# --- test_find_syncs --------------------------------------------------------------------------------
def find_syncs_problem(find_syncs_, built: dict, scope: str) -> str | None:
    returned = find_syncs_(built["trace"], scope)
    got = counts(returned)
    if got is None:
        return f"find_syncs should return a list of step indices (ints), got {type(returned).__name__}"
    if sorted(got) != built["syncs"] or got != sorted(got):
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
def train_params(values, size: int):
    """The parameters the probe trains: `values` tiled to `size` (as the probe builds them)."""
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    return np.tile(values, max(1, int(size) // max(1, values.size)))


def train_expected(values, size: int, steps: int, decay: float, shift: float):
    params = train_params(values, size)
    losses = []
    for _ in range(steps):
        params = (params * np.float32(decay) + np.float32(shift)).astype(np.float32)
        losses.append(np.mean(params * params, dtype=np.float32))
    return params, np.asarray(losses, dtype=np.float32)


def train_problems(report, name: str, steps: int, plan: Plan, values, size: int, decay: float,
                   shift: float) -> list[str]:
    """What is wrong with the student's loop, read here from the trace file the probe's own capture
    wrote (its bytes parsed here), from the steps this kernel counted, and from the results."""
    problem = report_problem(report, "train could not be traced", raised="train(step, params, batch, steps) raised {}",
                             result_error="train should return (params, losses): {}")
    if problem:
        return [problem]
    if report.get("no_trace"):
        return ["no trace was written while train ran: do not start or stop a trace inside train"]
    if plan._asked != steps:
        return ["train did not call step once per step: call step(params, batch) once in each of the "
                "steps"]
    trace, why = parse_trace_file(report)
    if trace is None:
        return [why]
    steps_seen = scope_events(trace, STEP_SCOPE)
    if len(steps_seen) != steps:
        return [f"the trace does not hold one annotation named {STEP_SCOPE!r} per step: wrap each step, and "
                f"nothing else, in jax.profiler.TraceAnnotation({STEP_SCOPE!r})"]
    runs = executions(trace, f"jit_{name}")
    if len(runs) != steps:
        return ["the trace does not show step executed once per step: call step once per step"]
    for index, (scope, (start, _)) in enumerate(zip(steps_seen, runs)):
        if not at_least(start, float(scope["ts"]), plan._pauses.get(index, 0.0), clock_slack(trace)):
            return ["the trace does not show each step's execution after the step began: call step inside "
                    f"the step's TraceAnnotation({STEP_SCOPE!r})"]
    syncs = find_syncs(trace, STEP_SCOPE)
    if syncs:
        return ["the host waits for the device inside the loop: keep the losses on the "
                "device inside the loop (no float(), .item(), printing or block_until_ready there)"]
    want_params, want_losses = train_expected(values, size, steps, decay, shift)
    try:
        numerics.check_close(report.get("params"), want_params, "the trained params", precision=numerics.FLOAT32)
        numerics.check_close(np.ravel(report.get("losses")), want_losses, "the losses (one per step)",
                             precision=numerics.FLOAT32)
    except CheckFailed as failure:
        return [str(failure)]
    if report.get("losses_on_device") is not True:  # the probe's word: unsaid, it fails
        return ["train should return the losses as one array still on the device (jnp.stack of the steps' "
                "losses): not a list of them, nor NumPy numbers"]
    return []


def check_train(train, rng: np.random.Generator | None = None) -> None:
    trace_instrument()
    rng = rng or np.random.default_rng()
    name = f"step_{int(rng.integers(16**6)):06x}"
    # Big enough that a step is still running when the host could wait for it: a wait for a result
    # that is already there leaves no trace.
    steps, size = int(rng.integers(3, 7)), int(rng.integers(1 << 9, 1 << 10)) << 10
    decay, shift = float(np.float32(rng.uniform(0.5, 0.95))), float(np.float32(rng.uniform(-0.2, 0.2)))
    values = rng.uniform(-1.0, 1.0, 1 << 10).astype(np.float32)  # the parameters, tiled to size
    paused = rng.choice(steps, 2, replace=False)
    plan = Plan(None, {int(i): float(rng.uniform(0.003, 0.010)) for i in paused})
    report = remote.probe("profiling.trace_training", train, name, steps, plan, values, size, decay, shift)
    problems = train_problems(report, name, steps, plan, values, size, decay, shift)
    if problems:
        raise CheckFailed("; ".join(problems))


# --- test_device_time -------------------------------------------------------------------------------
def device_seconds(trace, module: str) -> list[float]:
    """Each execution's device time of the compiled program `module`, in seconds, in time order: on a
    CPU from its first operation's start to its last operation's end (operations whose args name the
    module, grouped by run_id), on a TPU the duration of its event on the device's "XLA Modules" line."""
    return [(end - start) / 1e6 for start, end in executions(trace, module)]


def device_seconds_per_call(trace, module: str) -> float | None:
    """The median of `device_seconds`: one stalled execution moves it little. None without one."""
    seconds = device_seconds(trace, module)
    return float(np.median(seconds)) if seconds else None


def built_program_trace(rng: np.random.Generator, layout: str = "cpu") -> dict:
    """A trace of several compiled programs' executions as JAX's profiler writes one on a CPU or a TPU
    (the layouts of `built_trace`): {"trace", "module", "seconds"}, where `seconds` lists the device
    time of each execution of `module`.

    What a wrong reading falls for is in every trace: a second program whose name extends the
    module's (`jit_x` and `jit_x_1`) and a third, their executions longer than any of the module's
    (so a reading that takes them in moves the median), the host's launch of each execution named
    after its module, on a CPU the runtime's "wait for completion" event that carries the execution's
    run_id (not an operation: it ends after the execution) and gaps between an execution's
    operations (so summing operations is not the execution's span), on a TPU the chip's "Steps" line
    (each step longer than its execution) and its operations on "XLA Ops"; events shuffled."""
    r = lambda lo, hi: round(float(rng.uniform(lo, hi)), 3)  # noqa: E731
    tpu = layout == "tpu"
    pid = int(rng.integers(100, 9999))
    host, device, eigen = (int(t) for t in rng.choice(2**31, 3, replace=False))
    stem = str(rng.choice(["work", "matmul", "step", "forward"])) + f"_{int(rng.integers(16**4)):04x}"
    module = f"jit_{stem}"
    others = [f"{module}_{int(rng.integers(1, 9))}", f"jit_{str(rng.choice(['stack', 'update', 'copy']))}"]
    writer = TraceWriter()
    writer.process(pid, HOST_PROCESS)
    writer.thread(pid, host, "python3")
    if tpu:
        chip = int(rng.integers(1, 99))
        writer.thread(pid, device, "main/1")
        writer.process(chip, TPU_PROCESS)
        for tid, line in TPU_LINES.items():
            writer.thread(chip, tid, line)
        programs = {name: int(rng.integers(1, 2**62)) for name in [module, *others]}
    else:
        _cpu_runtime_threads(writer, pid, device, eigen)
    events = writer.events

    def x(tid, ts, dur, name, on=None, **args):
        writer.complete(pid if on is None else on, tid, ts, dur, name, **args)

    count = int(rng.integers(5, 10))
    # the module's executions, and the others' (each of them longer than any of the module's)
    runs = [module] * count + [others[0]] * int(rng.integers(1, 4)) + [others[1]] * int(rng.integers(1, 4))
    rng.shuffle(runs)
    seconds, t, run_id = [], r(10, 100), int(rng.integers(0, 1000))
    for name in runs:
        scale = (20.0, 400.0) if name == module else (500.0, 2000.0)
        x(host, t, r(5, 30), f"PjitFunction({name[4:]})")
        launch = t + r(1, 4)
        if tpu:
            x(device, launch, r(3, 10), f"CommonPjRtLoadedExecutable::Execute ({name})")
        else:
            x(host, launch, r(3, 10), "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice")
        begin = d = launch + r(5, 20)
        mark = len(events)
        ops = [str(o) for o in rng.choice(TPU_OPS if tpu else OPS, int(rng.integers(2, 5)), replace=False)]
        total = r(*scale)
        for k, op in enumerate(ops):
            dur = round(total / len(ops), 3)
            if tpu:
                x(3, d, dur, op, on=chip, **_tpu_op_args(rng, op, dur, name[4:]))
            else:
                writer.cpu_operation(pid, int(rng.choice([device, eigen])), device, d, dur, op, name, str(run_id))
            d += dur + (r(0.5, 4) if k < len(ops) - 1 else 0.0)
        if tpu:
            writer.tpu_execution(chip, 2, begin, d - begin, name, programs[name], str(run_id),
                                 device_duration_ps=str(int(round((d - begin) * 1e6))))
            x(1, begin, d - begin + r(5, 30), str(run_id), on=chip)
        else:
            writer.executor_wait(pid, device, d, r(5, 40), str(run_id))
        if name == module:  # from the events as written (rounded), as a reader sees them
            written = [e for e in events[mark:] if e.get("tid") == 2 and e.get("pid") == chip] if tpu else \
                [e for e in events[mark:] if (e.get("args") or {}).get("hlo_module") == name]
            seconds.append((max(e["ts"] + e["dur"] for e in written) - min(e["ts"] for e in written)) / 1e6)
        run_id += 1
        t = d + r(20, 200)
    return {"trace": writer.trace(int(rng.integers(2**31))), "module": module, "seconds": seconds}


def device_time_problem(device_seconds_per_call_, built: dict) -> str | None:
    got = device_seconds_per_call_(built["trace"], built["module"])
    want = float(np.median(built["seconds"]))
    if isinstance(got, bool) or not isinstance(got, (int, float, np.floating, np.integer)):
        return f"device_seconds_per_call should return a number of seconds, got {type(got).__name__}"
    if math.isclose(float(got), want, rel_tol=1e-6):
        return None
    if math.isclose(float(got), want * 1e6, rel_tol=1e-6):
        return "device_seconds_per_call should return seconds: a trace's ts and dur are microseconds"
    return (f"device_seconds_per_call read the wrong device time from a trace written on a "
            f"{built.get('layout', 'cpu').upper()}: the median, over the executions of that one program "
            "(its operations' hlo_module, grouped by run_id, from the first's start to the last's end; or its "
            "events on a device's 'XLA Modules' line, named module(<id>)), of each execution's device time")


def check_device_time(device_seconds_per_call_, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for layout in rng.permutation(LAYOUTS):
        for _ in range(2):
            built = {**built_program_trace(rng, str(layout)), "layout": str(layout)}
            problem = device_time_problem(device_seconds_per_call_, built)
            if problem:
                raise CheckFailed(problem)


# --- test_three_numbers -----------------------------------------------------------------------------
# The instrument: every call is held here for HOLD seconds (wall time, no CPU: the host's part) and
# then runs WORK seconds of device work (the device's part), with HOLD two to three times WORK, so that
#     latency    (one call, waited for)             ~ HOLD + WORK   (these calls' work SYNC_WORK times the others')
#     throughput (calls queued, one wait, per call)  ~ max(HOLD, WORK) = HOLD   (+ WORK / calls)
#     device time (the trace's executions)           ~ WORK
# stand apart by more than half of WORK each: whichever figure is returned for another misses its band.
WORK_SECONDS = (0.030, 0.045)  # the device work of each call, drawn per run (calibrated here): long beside a
                               # loaded machine's stalls of a few milliseconds
HOLD_FACTOR = (2.2, 2.8)       # each call's hold, in its work: drawn per run (a loaded machine's loop runs
                               # up to about 1.6 times its calibration: it still falls in WORK_OF_HOLD)
THREE_CALLS = (4, 5)           # `calls`, drawn per run: 3 * calls + 1 calls in all
SEPARATION = 0.5               # of the device work: the margin of the latency's and the waits' bands
QUEUED_WORK = (2.0, 0.2)       # the throughput's calls' work, in the work, alternating long and short (the long
                               # still shorter than the hold)
LAST_WORK = 3.0                # the last queued call's work, in the work: a clock read before the wait misses it
SYNC_WORK = (1.7, 2.0)         # the synchronous calls' work, in the work, drawn per run: a latency less a queued
                               # call's return (the host's part) is their work, a wall-clock time, not the trace's
TRACED_LAST = 0.25             # the last traced call's work, in the work: the wait after it (that call's work
                               # alone, the others done by then) is no device time (it moves the executions' mean
                               # by 15 to 19%: the mean is the device-time cell's mistake, taken here too)
HELD_MARGIN = 0.5              # of a hold and a work (what the held synchronous call adds to the samples' mean): a
                               # latency this far above the median of the synchronous calls this side timed is no median
AFTER_DISPATCH = (1.6, 2.0)    # each traced call held here again once its program is dispatched, in the work,
                               # drawn per call: its work runs meanwhile, so the wait left once the call comes
                               # back is not its device time (a median of those waits is near nothing), and
                               # a traced call's span less its first hold is this hold, not the work
WAITED_MARGIN = 0.5            # of the difference in work: long queued calls costing this much more beyond their
                               # holds than short ones were waited for
DEVICE_TOLERANCE = 0.15        # the returned device time within this share of the trace's median (or mean) execution
# A run decides only if its device work came out as planned against its hold; otherwise (the machine
# slowed the loop, or ran it faster than calibrated) the figures may not separate, and it is run again.
WORK_OF_HOLD = (0.25, 0.8)
QUIET_SPREAD = 0.5             # of the device work: the most a run's calls of one kind may differ for the
                               # run to decide a failure (a stall there is the machine's, and the run is repeated)
THREE_RUNS = 4
BUSY = "the device work did not come out as planned (a busy machine): run again"
UNCLEAR = "the grader could not tell whether the throughput's calls were queued (a busy machine): run again"


def three_numbers_problems(report, run: dict):
    """(problems, decided) for the student's three numbers, judged against what this side observed:
    the calls it counted and timed on its own clock (`run["asked"]`, `run["returned"]`), the hold it
    made, and the device time it reads itself from the trace file's bytes. A failure is decided only
    in a quiet run: this side saw the executions' work and each run's calls steady."""
    calls, hold, module = run["calls"], run["hold"], run["module"]
    problem = report_problem(report, "three_numbers could not be run",
                             raised="three_numbers(fn, *args, module=..., trace_dir=..., calls=...) raised {}",
                             returned="three_numbers should return a dict with 'latency', 'throughput' and "
                                      "'device', each seconds ({})")
    if problem:
        return [problem], True
    numbers = report.get("numbers") or {}
    if not all(isinstance(numbers.get(k), float) and math.isfinite(numbers[k]) and numbers[k] > 0
               for k in ("latency", "throughput", "device")):
        return ["three_numbers should return positive, finite seconds for 'latency', 'throughput' and 'device'"], True
    asked = run["asked"]
    if len(asked) != 3 * calls + 1:
        return [f"with calls={calls} three_numbers called fn {len(asked)} time(s); expected {3 * calls + 1}: one "
                "first call apart, then calls synchronous calls (latency), calls queued calls under the trace "
                "(device time), calls queued calls (throughput)"], True
    if report.get("no_trace"):
        return ["no trace file was written under trace_dir: capture the queued calls with jax.profiler.trace("
                "trace_dir, create_perfetto_trace=True)"], True
    trace, why = parse_trace_file(report)
    if trace is None:
        return [why], True
    # Every traced call held after its dispatch, as the probe says it dispatches: a call made around the
    # probe's word (the instrument reached through its closure) would leave its wait its work again.
    planned = [k for k, pause in enumerate(run.get("after") or []) if pause > 0]
    if "held_after" in run and run["held_after"] != planned:
        return ["the calls did not run as the instrument dispatches them: call fn itself"], True
    runs = executions(trace, module)
    if len(runs) != calls:
        return [f"the trace holds {len(runs)} execution(s) of {module}, not {calls}: trace the {calls} queued calls "
                "and nothing else (the first call and the timed calls outside it)"], True
    # Each call was held here before its dispatch, the first too: the k-th execution (from 0) starts at
    # least k + 1 holds after the trace began.
    began = min((float(e["ts"]) for e in complete(trace)), default=0.0)
    if any(not at_least(start, began, (k + 1) * hold, max(clock_slack(trace), 1000.0))
           for k, (start, _) in enumerate(runs)):
        return ["the trace does not show the calls as they ran: return the numbers read from the file "
                "jax.profiler wrote"], True
    lengths = [(end - start) / 1e6 for start, end in runs]
    work = run["work_seen"] = float(np.median(lengths))
    if not WORK_OF_HOLD[0] * hold <= work <= WORK_OF_HOLD[1] * hold:
        return [BUSY], False
    spans = [later - earlier for earlier, later in zip(asked, asked[1:] + [run["returned"]])]
    sync, queued = spans[1:calls + 1], spans[2 * calls + 1:]
    slow = run.get("slow_call")  # the synchronous call held longer on purpose: not the machine's stall
    fast = run.get("fast_call")  # and the one neither held nor given work
    steady = [span for k, span in enumerate(sync, start=1) if k not in (slow, fast)] or sync
    kinds = run.get("queued_work", [1.0] * calls)[:-1]  # the queued calls of one length of work vary alike
    even = lengths[:-1]  # the last traced call's work is TRACED_LAST of the others'
    quiet = (max(even) <= 1.5 * min(even) and max(steady) - min(steady) <= QUIET_SPREAD * work
             and all(max(group) - min(group) <= QUIET_SPREAD * work for group in
                     ([q for q, k in zip(queued, kinds) if k == kind] for kind in set(kinds))))
    latency, throughput, device = numbers["latency"], numbers["throughput"], numbers["device"]
    problems = []
    if latency < hold + SEPARATION * work:
        problems.append("the latency is shorter than one call and its device work: time each synchronous call "
                        "on its own, waiting for its result (jax.block_until_ready) before reading the clock")
    elif latency > float(np.median(sync)) + HELD_MARGIN * (hold + work):  # a sample is its call's span,
        # give or take the channel; the held call adds a hold and a work to the samples' mean at any load
        problems.append("the latency is longer than the synchronous calls the grader timed: the median of "
                        "calls samples, one per call, each its own call")
    elif latency < float(np.median(sync)) - SEPARATION * work:  # the unheld call pulls a mean without the
        # slowest sample this far below the median
        problems.append("the latency is shorter than the synchronous calls the grader timed: the median of "
                        "calls samples, not a mean of some of them")
    # What a call costs beyond its hold, as this side sees it: the way back to the student's process, the
    # dispatch (and the work, if the student waits for it) and the way to the next call here. On a busy
    # machine the ways themselves take milliseconds, so the rules compare runs of calls with each other.
    held = run["held"]
    beyond = [span - h for span, h in zip(spans, held)]
    last_beyond = beyond[-1]  # the last queued call: its way back, its dispatch, its work and the function's return
    long_short = run.get("queued_work", [])[:-1]
    # The queued calls' work alternates, long and short (QUEUED_WORK): a call waited for costs its work
    # beyond its hold, so long calls cost more than short ones; calls queued cost the same (compared within
    # the run: the channel's own pace, slower beside the work on a busy machine, cancels out).
    queued_calls = list(zip(long_short, beyond[2 * calls + 1:-1]))
    longer = [b for w, b in queued_calls if w > 1.0]
    shorter = [b for w, b in queued_calls if w < 1.0]
    # (every long one beyond every short one: on a busy machine a call's way to the student's process is
    # slower beside a long call's work than after a short one's, by a part of that way, never by all)
    # A pass must show the calls queued: every long one within the margin of every short one. Between the
    # two (the channel's delays varied by more than the margin) the run cannot tell, and is run again.
    margin = WAITED_MARGIN * (QUEUED_WORK[0] - QUEUED_WORK[1]) * work
    unclear = bool(longer and shorter) and min(longer) - max(shorter) < margin <= max(longer) - min(shorter)
    way = float(np.median(shorter)) if shorter else 0.0  # a queued call's ways to and from this side, and its dispatch
    if longer and shorter and min(longer) - max(shorter) >= margin:
        problems.append("the throughput's calls were each waited for: queue them back to back and wait once, "
                        "for all of them")
    elif unclear:
        problems.append(UNCLEAR)
    elif throughput < hold * 0.98:
        problems.append("the throughput is shorter than the calls take to dispatch: time all the queued calls "
                        "together, from before the first to after the wait for the last, divided by calls "
                        "(not the device time)")
    elif (last_beyond - way < SEPARATION * LAST_WORK * work
          # the queued run, as its clock saw it, holds the calls up to the last one's hold, the ways to and
          # from this side, and then that call's work (LAST_WORK times a call's), which this side also sees
          # end before the function returns (freeing unwaited results can make the function wait)
          or throughput * calls - (asked[3 * calls] - asked[2 * calls + 1] + held[-1]) - way
          < SEPARATION * LAST_WORK * work):
        problems.append("the throughput's clock stopped before the last queued call's work was done: wait for "
                        "the queued calls' results before reading the clock")
    elif throughput * calls > run["returned"] - asked[2 * calls + 1] + SEPARATION * work:
        problems.append("the throughput is longer than the queued calls took: time the queued calls "
                        "together, one wait at the end, divided by calls (not the latency)")
    mean = float(np.mean(lengths))  # a mean for the median is the device-time cell's mistake, not this one's
    if not any(abs(device - seen) <= DEVICE_TOLERANCE * seen + 20e-6 for seen in (work, mean)):
        problems.append("the device time is not the trace's: the median over the queued calls' executions of "
                        "the program in the trace (device_seconds_per_call), not a wall-clock time")
    return problems, (quiet and not unclear) or not problems


class Calls:
    """The instrument's calls (checks/timing.py's `Schedule`: each held here, then given its trip count,
    counted and timed on this side's clock), and `finished()`, which the probe calls as soon as the
    student's function returns: the end of the last queued call's span, before the probe reads the file."""

    def __init__(self, iterations: list[int], holds: list[float], after: list[float] | None = None):
        from . import timing

        self._schedule = timing.Schedule(iterations, holds)
        self._after = list(after or [])  # each call's second hold, once dispatched (0: none)
        self._held_after: set[int] = set()  # the calls whose second hold was made (the probe said so)
        self._finished: float | None = None
        self._held: list[float] = []  # how long each call was held, as it came out (a sleep wakes late)

    def next_call(self) -> int:
        asked = time.monotonic()
        try:
            return self._schedule.next_call()
        finally:
            self._held.append(time.monotonic() - asked)

    def dispatched(self) -> None:
        """The probe's word that the last call's program is dispatched: that call is held here again for
        the time planned after its dispatch (never told), while its work runs."""
        index = len(self._schedule._served) - 1
        if 0 <= index < len(self._after) and self._after[index] > 0 and index not in self._held_after:
            self._held_after.add(index)
            time.sleep(self._after[index])

    def finished(self) -> None:
        if self._finished is None:
            self._finished = time.monotonic()


def three_numbers_plan(rng, seconds_per_iteration: float | None = None) -> dict:
    """A run's calls, hold and work; the work's trip count from this kernel's calibration, or from what
    an earlier run's trace showed one iteration take (a busy machine runs the loop slower than the
    calibration's fastest run)."""
    from . import timing

    work = float(rng.uniform(*WORK_SECONDS))
    hold = work * float(rng.uniform(*HOLD_FACTOR))
    calls = int(rng.integers(THREE_CALLS[0], THREE_CALLS[1] + 1))
    iterations = (max(1, int(work / seconds_per_iteration)) if seconds_per_iteration
                  else timing.calibrate().iterations(work))
    name = f"work_{int(rng.integers(16**6)):06x}"
    queued_work = [QUEUED_WORK[k % 2] for k in range(calls - 1)] + [LAST_WORK]
    slow_call = int(rng.integers(1, calls + 1))
    fast_call = slow_call % calls + 1  # another synchronous call: one loop trip of work, no hold
    sync = max(1, int(iterations * float(rng.uniform(*SYNC_WORK))))
    plan = ([iterations] + [1 if k == fast_call else sync for k in range(1, calls + 1)] + [iterations] * (calls - 1)
            + [max(1, int(iterations * TRACED_LAST))] + [max(1, int(iterations * w)) for w in queued_work])
    # Only the traced calls are held after their dispatch: the latency's and the throughput's calls are
    # judged by their spans on this side's clock, as before.
    after = [0.0] * (calls + 1) + [work * float(rng.uniform(*AFTER_DISPATCH)) for _ in range(calls)] + [0.0] * calls
    return {"calls": calls, "hold": hold, "work": work, "iterations": iterations, "name": name,
            "module": f"jit_{name}", "queued_work": queued_work, "plan": plan, "slow_call": slow_call,
            "fast_call": fast_call, "after": after}


def check_three_numbers(three_numbers, rng: np.random.Generator | None = None) -> None:
    """The three numbers of a function whose calls this side holds and sizes, judged by what it saw;
    a run the machine disturbed is run again (its work sized by what the last run's trace showed), up to
    THREE_RUNS."""
    trace_instrument()
    rng = rng or np.random.default_rng()
    problems, seen, per_iteration = [], {}, None
    for attempt in range(THREE_RUNS):
        run = three_numbers_plan(rng, per_iteration)
        total = 3 * run["calls"] + 1
        holds = [run["hold"]] * total
        # One synchronous call held a whole call longer for each of the calls: the median of the latency's
        # samples does not move, their mean doubles, past the latency's bound.
        holds[run["slow_call"]] += run["calls"] * (run["hold"] + run["work"])
        # And another neither held nor given work (its hold and work added to the slow one's hold: the mean does
        # not fall): the median does not move, the fastest sample falls below the latency's bound.
        holds[run["fast_call"]] = 0.0
        holds[run["slow_call"]] += run["hold"] + SYNC_WORK[1] * run["work"]
        calls = Calls(run["plan"], holds, run["after"])
        report = remote.probe("profiling.three_numbers_run", three_numbers, run["name"], calls, run["calls"])
        run["returned"] = calls._finished if calls._finished is not None else time.monotonic()
        run["asked"], run["held"] = list(calls._schedule._asked), list(calls._held)
        run["held_after"] = sorted(calls._held_after)
        problems, decided = three_numbers_problems(report, run)
        if not problems or decided:
            break
        if run.get("work_seen"):  # the next run's trip count from what this one's trace showed
            per_iteration = run["work_seen"] / run["iterations"]
        for problem in problems:  # what disturbed runs said, counted: the function's own mistake recurs
            if problem not in (BUSY, UNCLEAR):
                seen[problem] = seen.get(problem, 0) + 1
    if problems and not decided and max(seen.values(), default=0) < 2:  # no mistake recurred: nothing decided
        raise MachineBusy(f"three_numbers could not be judged in {THREE_RUNS} runs: {problems[0]}")
    if problems:
        raise CheckFailed(problems[0] if decided or not seen else max(seen, key=seen.get))
