"""Grade the diagnosis of slow training loops: the evidence read from traces, never a guess or a speed.

performance-10's students write `trace_steps(step, params, steps, trace_dir)`, which traces a
training loop with `jax.profiler` (one warm-up step before the trace, each step in a
`StepTraceAnnotation`); `step_evidence(trace, scope)`, which reads per step the compilations and
the host-device transfers, and the program executions of the whole loop; `diagnose(evidence)`,
which names a loop's cause from that evidence by the lesson's ordered rule; and three fixed loops,
`fast_loop_a`, `fast_loop_b` and `fast_loop_c`, factories `(x, y, lr) -> step` whose steps compile
nothing, copy nothing and run one program each.

What the lesson reads, on a CPU (jax 0.9.2 and 0.10.2) and on a TPU v5e (jax 0.10.2, the traces
in tests/data/tpu-v5e); COMPILE_EVENTS and TRANSFER_EVENTS name them once, the lesson carries the
same tuples:
a program built is JAX's `lower_sharding_computation` annotation on the thread that called the
function (a compilation, `backend_compile_and_load`, follows unless the persistent compilation
cache holds the program: with the cache on, a loop that retraces every step compiles nothing but
still lowers in every step, so the lowering is what is counted); a host-to-device copy is
`DevicePut` (a NumPy array or a Python scalar handed to a jitted function; `jnp.asarray` of a
NumPy array from jax 0.10, which also runs a one-operation program, `jit_stage`) or
`DevicePutWithSharding` (`jax.device_put`; `jnp.asarray` in jax 0.9), a device-to-host copy JAX's
`np.asarray(jax.Array)` annotation;
an execution is one `run_id`: where the trace has device processes (`/device:TPU:0`), the events
there that carry one (the "XLA Modules" line, one event per execution named
"<module>(<program id>)"; the host's launch events carry run_ids of the runtime's own, and the "XLA
Ops" line's operations none); on a CPU, every event that carries one (its operations, with
`hlo_module`, and the executor's wait). Executions run after their dispatch, often while the host is
already in a later step, so the lesson counts them for the whole loop, from the first step's
start. A step's waiting share is the time the device sat idle between consecutive executions that
start inside the step, over the step's length: the device waiting for the host to dispatch the
step's next program (performance-06's gaps, seen from the device).

The rule (`cause_of`): a program built in every step, "recompile"; else at least DISPATCH_LIMIT (4)
executions per step and a waiting share of at least DISPATCH_SHARE (0.5) in most steps, "dispatch";
else a copy in every step, "transfer"; else "none". Measured on this machine's CPU (0.9.2 and
0.10.2, a few runs): a step and its metrics update (two programs) wait 0.18-0.38 of each step;
jnp.asarray of x and y (three programs on 0.10) 0.34-0.56, which is why the count is there too; the
course's dispatch-bound loops 0.5-0.97 (per_example the lowest); on the TPU, loop C waits 0.95-0.97.
A GPU's traces are not in the course's data: `trace_instrument` stops the checks there if its
layout reads otherwise.

Grade cells run in the trusted kernel. Per cell:

- test_trace_steps (`check_trace_steps`), *observed and verified*, with *evidence* beyond: the
  probe hands `trace_steps` a fresh (not yet compiled) jitted step named at grading time, which
  asks this kernel's `Plan` before each call (counted here: one warm-up and one per step; some
  steps pause first for lengths drawn here and never told), on parameters holding values sent from
  here, and a fresh folder that already holds an older run. The file `trace_steps` names must be
  the perfetto_trace.json.gz it wrote under that folder (paths: *evidence*). Its bytes, parsed
  here, must hold one `StepTraceAnnotation` per step, numbered 0, 1, ... in time order; no
  compilation in a step (the warm-up call compiled before the trace); exactly one execution of the
  step's module per step, the k-th starting no earlier than the k-th step's start plus the pause
  made before its dispatch (a trace closed before the queued work ran misses the last one: the
  last step's program spins a scalar loop on the device for about HOLD seconds, calibrated here as
  checks/timing.py does, so its execution ends long after the loop does; an execution counts only
  whole, with every operation the step's program runs, since its first copies end at once); and the
  returned params must be NumPy's after `steps` steps from the params given (the warm-up's result
  unused). The same limit as performance-06's captures: a program that timed its own calls into
  the plan and wrote every event a real trace has (an emulation of the profiler) would pass.
- test_step_evidence (`check_step_evidence`), *values only*: traces built here, one shaped like a
  CPU's and one like a TPU's (programs built with and without a compilation, compilations with their
  compiler-thread parts, copies of every kind,
  executions split over two threads, queued past their step and past the loop, executor and `end:`
  events, a warm-up's execution before the first step, copies on a data-loading thread and in the
  gaps between steps, a scope whose name extends the step's, events starting exactly at a step's
  start and at its end, an instant event and a begin/end pair that are no complete events, the
  events shuffled); then a trace with no complete event named as the scope asked for. The answer
  must be exactly the counts built (zero steps, empty lists and zero executions for the last), and
  the waiting shares computed from the executions' spans as built.
  A forger would have to count them, which is the task.
- test_diagnose (`check_diagnose`), *values only*: first evidence written here on the rule's edges
  (`written_cases`: a program built in every step with every sign of dispatch, fewer programs than
  DISPATCH_LIMIT with a waiting device, many programs on a busy device, waiting in a minority of
  steps and in exactly half of them, as many programs built as steps but none in one step, no steps
  at all: "none"); then loops the lesson describes, one per cause and a clean one, in an order and in
  variants drawn here (always with recompiling loops whose steps also copy or run many programs,
  jnp.asarray of the batch, a step with its metrics update, and a dispatch-bound loop whose steps
  also copy), on data drawn here, are traced in this kernel by the course's own driver and read with
  the reference
  reading; `diagnose` is handed each loop's evidence and must name its cause. Nothing of the
  student's process makes the evidence, so a mistake in `step_evidence` costs only its own cell;
  a forger would have to apply the rule, which is the task.
- test_fix_a, test_fix_b, test_fix_c (`check_fix`), *observed and verified*, with *evidence*
  beyond: the probe calls the student's factory on data drawn here (NumPy arrays for loop B, device
  arrays for A and C), each step asking the plan first (counted here, some pausing), and traces the
  loop with the course's own driver. From the file's bytes, parsed here: no compilation in any step,
  no copy in the loop on any thread (a loader thread's upload in every step shows there, not on the
  steps' thread), exactly one execution per step, the k-th after the k-th step's pause; the params
  and losses must match NumPy on the data sent. Then one step is exported (`jax.export`, the data
  baked in) and run here, on parameters never sent, against NumPy (*verified*,
  `checks/programs.py`). Evidence limit: as test_trace_steps.

`trace_instrument()` runs the course's own loops (one per cause) in this kernel before grading, and
every loop test_diagnose traces must read as its cause: a JAX whose traces no longer show these
events stops the checks with InstrumentMissing, never as every student's mistake.
"""
from __future__ import annotations

import math

import numpy as np

from . import CheckFailed, InstrumentMissing, numerics, programs, remote, timing
from .profiling import Plan, plain
from .student_calls import call_student, counts, numbers
from .trace_writer import HOST_PROCESS, TPU_PROCESS, TraceWriter
from .traces import (MODULES_LINE, OPS_LINE, at_least, clock_slack, complete, device_runs, events_of, execution_starts,
                     parse_trace_file, report_problem, returned_file_problem, scope_events, thread)

STEP_SCOPE = "train"
# A program JAX built anew: the lowering of a function it has just traced, which a compilation
# (`backend_compile_and_load`; `backend_compile` in older JAX) follows unless the persistent
# compilation cache holds the program. Counting lowerings, a loop that retraces in every step reads
# as recompiling with the cache on too.
COMPILE_EVENTS = ("lower_sharding_computation",)
TRANSFER_EVENTS = ("DevicePut", "DevicePutWithSharding", "np.asarray(jax.Array)")
CAUSES = ("recompile", "dispatch", "transfer", "none")
DISPATCH_LIMIT = 4          # programs per step from which a loop may be dispatch-bound (a step and its metrics: 2)
DISPATCH_SHARE = 0.5        # ... when the device waits between a step's programs for this share of the step
DIAGNOSE_STEPS = 3          # steps of each course loop traced for test_diagnose ("most steps": two of three)
HOLD = 0.15                 # seconds of device work that hold the last step's execution in test_trace_steps
WAITING_TOLERANCE = 1e-6    # a step's waiting share, read two ways, agrees to this


# --- the reference readings (what an execution is: checks/traces.py) ---------------------------
def step_evidence(trace, scope: str) -> dict:
    """Per step (the complete events named `scope`, in time order): the programs built and the
    copies on the steps' thread inside the step's span, and the share of the step's span in which
    the device waited between the executions that start inside it; for the whole loop: the
    executions that start at or after the first step's start."""
    steps = scope_events(trace, scope)
    if not steps:
        return {"steps": 0, "compiles": [], "transfers": [], "executions": 0, "waiting": []}
    steps_thread = thread(steps[0])
    events = [e for e in complete(trace) if thread(e) == steps_thread]
    first = float(steps[0]["ts"])
    runs = sorted((start, end) for _, start, end in device_runs(trace).values() if start >= first)
    compiles, transfers, waiting = [], [], []
    for step in steps:
        start, end = float(step["ts"]), float(step["ts"]) + float(step["dur"])
        inside = [e.get("name") for e in events if start <= float(e["ts"]) <= end]
        compiles.append(sum(name in COMPILE_EVENTS for name in inside))
        transfers.append(sum(name in TRANSFER_EVENTS for name in inside))
        mine = [run for run in runs if start <= run[0] <= end]
        idle = sum(max(0.0, b[0] - a[1]) for a, b in zip(mine, mine[1:]))
        waiting.append(idle / (end - start) if end > start else 0.0)
    return {"steps": len(steps), "compiles": compiles, "transfers": transfers, "executions": len(runs),
            "waiting": waiting}


def cause_of(evidence: dict) -> str:
    """The lesson's rule, in its order: a program built in every step; then at least DISPATCH_LIMIT
    executions per step with the device waiting between a step's programs for at least
    DISPATCH_SHARE of the step in most steps (more than half); then copies in every step; otherwise
    nothing."""
    steps = evidence["steps"]
    if not steps:
        return "none"
    if all(c > 0 for c in evidence["compiles"]):
        return "recompile"
    if evidence["executions"] >= DISPATCH_LIMIT * steps and \
            2 * sum(w >= DISPATCH_SHARE for w in evidence["waiting"]) > steps:
        return "dispatch"
    if all(t > 0 for t in evidence["transfers"]):
        return "transfer"
    return "none"


# --- the course's model, in NumPy ---------------------------------------------------------------
def sgd_numpy(w, b, x, y, lr: float, steps: int):
    """float64 gradient descent on mean((x . w + b - y)^2): (w, b, losses), a loss per step (before
    its update)."""
    w, b = np.asarray(w, np.float64).copy(), float(b)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    losses = []
    for _ in range(int(steps)):
        r = x @ w + b - y
        losses.append(float(np.mean(r * r)))
        w, b = w - lr * (2.0 / len(y)) * (x.T @ r), b - lr * (2.0 / len(y)) * float(np.sum(r))
    return w, b, np.asarray(losses)


def draw_data(rng: np.random.Generator, n: tuple = (12, 24), d: tuple = (2, 5)):
    """x, y, lr, w, b for a loop: a batch of a few features, a learning rate gradient descent is
    stable at, and starting parameters; all float32 values."""
    n, d = int(rng.integers(*n)), int(rng.integers(*d))
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = (x @ rng.uniform(-1.0, 1.0, d) + rng.uniform(-0.5, 0.5) + 0.1 * rng.standard_normal(n)).astype(np.float32)
    lr = float(np.float32(rng.uniform(0.04, 0.12)))
    w = rng.uniform(-0.5, 0.5, d).astype(np.float32)
    b = float(np.float32(rng.uniform(-0.5, 0.5)))
    return x, y, lr, w, b


# --- this JAX's traces ----------------------------------------------------------------------------
_trace_instrument_confirmed = False  # for this process: its JAX does not change


def trace_instrument() -> None:
    """Check in this process that this JAX's traces show what the lesson reads: the course's own
    loops (a recompiling, a copying, a dispatch-bound and a clean one, traced by the course's
    driver) must read as their causes. Otherwise InstrumentMissing: a trace layout that a new JAX
    changed shows as a broken lesson, never as every student's mistake."""
    global _trace_instrument_confirmed
    if _trace_instrument_confirmed:
        return
    rng = np.random.default_rng(0)
    for kind, variant in (("recompile", "fresh_jit"), ("transfer", "device_put"), ("transfer", "asarray_batch"),
                          ("dispatch", "per_example"), ("none", "with_metrics")):
        course_evidence(kind, variant, DIAGNOSE_STEPS, draw_data(rng, n=(6, 7), d=(2, 3)))
    # The clean loop: numbered steps, and one execution per step of the module JAX names jit_<function>
    # (test_trace_steps finds the step's executions by that name).
    trace = course_trace("none", "clean", 2, draw_data(rng, n=(6, 7), d=(2, 3)))
    numbers = [str((e.get("args") or {}).get("step_num")) for e in scope_events(trace or {}, STEP_SCOPE)]
    modules = [module for module, _, _ in sorted(device_runs(trace or {}).values(), key=lambda run: run[1])]
    if numbers != ["0", "1"] or modules != ["jit_sgd_update"] * 2 or course_cause(trace) != "none":
        raise _instrument_missing(f"a trace of the course's own clean loop shows steps {numbers} and executions of "
                                  f"{sorted(set(map(str, modules)))}, not steps 0 and 1 running jit_sgd_update once "
                                  "each")
    _trace_instrument_confirmed = True


def course_cause(trace) -> str:
    return cause_of(step_evidence(trace, STEP_SCOPE)) if trace is not None else "no trace"


def _paced(trace, plan: Plan, steps: list, runs: list, first_index: int) -> bool:
    """The k-th execution (in time order) starts no earlier than the k-th step's start plus the
    pause this kernel made before its dispatch (plan index first_index + k), give or take how far
    the device's clock may be from the host's where the trace has device processes."""
    slack = clock_slack(trace)
    return all(at_least(start, float(step["ts"]), plan._pauses.get(first_index + k, 0.0), slack)
               for k, (step, start) in enumerate(zip(steps, runs)))


# --- test_trace_steps -----------------------------------------------------------------------------
def decay_expected(values, size: int, steps: int, decay: float, shift: float):
    params = np.tile(np.asarray(values, np.float32).reshape(-1), max(1, int(size) // max(1, np.size(values))))
    for _ in range(int(steps)):
        params = (params * np.float32(decay) + np.float32(shift)).astype(np.float32)
    return params[:np.size(values)]


def trace_steps_problems(report, name: str, steps: int, plan: Plan, values, size: int, decay: float,
                         shift: float) -> list[str]:
    """What is wrong with the trace the student's trace_steps wrote, read here from its bytes."""
    problem = report_problem(report, "trace_steps could not be run on a loop",
                             raised="trace_steps(step, params, steps, trace_dir) raised {}",
                             returned="trace_steps should return (params, path), got {}")
    problem = problem or returned_file_problem(report, "trace_steps", "this trace")
    if problem:
        return [problem]
    if plan._asked != steps + 1:
        return [f"trace_steps called step {plan._asked} time(s) for {steps} steps: call it once before the trace "
                "(the warm-up, which compiles) and once in each step"]
    trace, why = parse_trace_file(report)
    if trace is None:
        return [why]
    found = scope_events(trace, STEP_SCOPE)
    numbers = [str((e.get("args") or {}).get("step_num")) for e in found]
    if len(found) != steps or numbers != [str(i) for i in range(steps)]:
        return [f"the trace should hold one jax.profiler.StepTraceAnnotation({STEP_SCOPE!r}, step_num=i) per "
                f"step, numbered 0, 1, ... (found {len(found)} event(s) named {STEP_SCOPE!r})"]
    if any(step_evidence(trace, STEP_SCOPE)["compiles"]):
        return ["the trace shows a compilation in a step: make the warm-up call, and wait for it, before the trace "
                "starts"]
    # An execution counts once it is whole: on a CPU, every operation the step's program runs (the last
    # step's first copies end at once, its loop much later, so a trace that stops early may hold a
    # part); a device's module line holds one event per execution, written once it ran.
    ops: dict = {}
    for event in complete(trace):
        args = event.get("args")
        if isinstance(args, dict) and args.get("hlo_module") == f"jit_{name}" and "run_id" in args:
            ops.setdefault(str(args["run_id"]), set()).add(str(args.get("hlo_op")))
    whole = set().union(*ops.values()) if ops else set()
    runs = sorted(start for run_id, (module, start, _) in device_runs(trace).items()
                  if module == f"jit_{name}" and start >= float(found[0]["ts"]) and ops.get(run_id, whole) == whole)
    if len(runs) < steps:
        return ["the trace is missing executions of the steps: the last steps were still queued when the trace "
                "stopped, so wait for the result (jax.block_until_ready) inside the trace"]
    if len(runs) > steps:
        return ["the trace shows more executions than steps: wait for the warm-up call before the trace starts"]
    if not _paced(trace, plan, found, runs, 1):
        return ["the trace does not show the steps' executions when they ran: return the file jax.profiler "
                "wrote during this trace"]
    params = report.get("params")
    if params is None:
        return [f"trace_steps should return the params after the steps as its first value "
                f"({report.get('result_error', 'none came back')})"]
    try:
        numerics.check_close(params, decay_expected(values, size, steps, decay, shift),
                             "the params trace_steps returned (after `steps` steps from params; the warm-up's "
                             "result is not used)", precision=numerics.FLOAT32)
    except CheckFailed as failure:
        return [str(failure)]
    return []


def check_trace_steps(trace_steps, rng: np.random.Generator | None = None) -> None:
    trace_instrument()
    rng = rng or np.random.default_rng()
    name = f"step_{int(rng.integers(16**6)):06x}"
    steps = int(rng.integers(3, 6))
    size = int(rng.integers(1 << 8, 1 << 9)) << 10
    decay, shift = float(np.float32(rng.uniform(0.5, 0.95))), float(np.float32(rng.uniform(-0.2, 0.2)))
    values = rng.uniform(-1.0, 1.0, 1 << 10).astype(np.float32)
    # Pauses before two of the steps (plan index 0 is the warm-up), never the last: the steps after
    # the last pause are dispatched at once and still queued when the loop ends.
    paused = rng.choice(np.arange(1, steps), 2, replace=False)
    plan = Plan(None, {int(i): float(rng.uniform(0.003, 0.010)) for i in paused})
    folder = f"trace-{int(rng.integers(16**8)):08x}"
    # The last step's execution is held on the device for about HOLD seconds of work (the course's
    # timing calibration, made in this kernel): a trace that stops without waiting misses it.
    spin = timing.calibrate().iterations(HOLD)
    report = remote.probe("diagnosis.capture_steps", trace_steps, name, steps, plan, values, size, decay, shift,
                          folder, spin)
    problems = trace_steps_problems(report, name, steps, plan, values, size, decay, shift)
    if problems:
        raise CheckFailed(problems[0])


# --- test_step_evidence: traces built here --------------------------------------------------------
TRANSFER_NESTS = {
    # each kind of copy as the profiler writes it (outermost first); the last name is the one counted
    "DevicePut": ["PjitFunction(update)", "ParseArguments", "DevicePut"],
    "DevicePutWithSharding": ["shard_args", "DevicePutWithSharding"],
    "np.asarray(jax.Array)": ["$array.py:297 __float__", "np.asarray(jax.Array)"],
}
HOST_NOISE = ["shard_args", "batched_copy_array_to_devices_with_sharding", "BatchedCopyToDeviceWithSharding: dispatch",
              "ArrayImpl.copy_to_host_async", "Wait for usage holds", "Wait for donation holds",
              "PythonRefManager::CollectGarbage", "ParseArguments", "$dispatch.py:424 _device_put_sharding_impl",
              "$array.py:260 ndim", "ExecuteReplicated.__call__"]
OPS = ["broadcast_multiply_fusion", "subtract_multiply_fusion", "wrapped_reduce-window", "multiply_multiply_fusion",
       "reduce_multiply_fusion", "dot", "wrapped_reduce", "copy-start", "copy-done"]
MODULES = ["jit_sgd_update", "jit_update", "jit__lambda", "jit_dynamic_slice", "jit_add", "jit_scatter-add",
           "jit_stage"]
LAYOUTS = ("cpu", "tpu")


def built_trace(rng: np.random.Generator, steps: int, scope: str, *, shuffle: bool = True, layout: str = "cpu") -> dict:
    """A trace of a `steps`-step loop as JAX's profiler writes one on a CPU (jax 0.9 and 0.10) or on a
    TPU (jax 0.10.2 on a v5e, as in tests/data/tpu-v5e), with per-step counts drawn here;
    {"trace": ..., "evidence": what it was built with}.

    On a CPU every operation of an execution is an event with "hlo_op", "hlo_module" and its
    "run_id" (and the executor's wait carries the run_id too), on the host's threads. On a TPU the
    chip is a process of its own, "/device:TPU:0": its "XLA Modules" line holds one event per
    execution, "<module>(<program id>)" with the "run_id", its "XLA Ops" line the operations (no
    run_id, no hlo_op), and the host's launch and completion events carry other run_ids of the
    runtime's own. Programs are built with their lowering and, unless the persistent compilation
    cache held them, a compilation (with its parts on the compiler's threads)."""
    r = lambda lo, hi: round(float(rng.uniform(lo, hi)), 3)  # noqa: E731
    tpu = layout == "tpu"
    pid, chip = (int(p) for p in rng.choice(np.arange(100, 9999), 2, replace=False))
    host, device, eigen, compiler, codegen, loader, modules_line, ops_line, steps_line = (
        int(t) for t in rng.choice(2**31, 9, replace=False))
    writer = TraceWriter(shortest=0.1)
    events = writer.events
    writer.process(pid, HOST_PROCESS)
    names = [(host, "python"), (compiler, "tf_PjRtCompilerThread/3"), (loader, "data_loader")]
    if tpu:
        writer.process(chip, TPU_PROCESS)
        for tid, label in ((steps_line, "Steps"), (modules_line, MODULES_LINE), (ops_line, OPS_LINE)):
            writer.thread(chip, tid, label)
        names += [(device, "tfrt-non-blocking-queue/3544"), (eigen, "futex-default-SDomainT/3623")]
    else:
        names += [(device, "tf_XLAPjRtCpuClient/1"), (eigen, "tf_XLAEigen/2"), (codegen, "tf_xla-cpu-codegen/4")]
    for tid, label in names:
        writer.thread(pid, tid, label)

    def x(tid, ts, dur, name, process=None, **args):
        writer.complete(pid if process is None else process, tid, ts, dur, name, **args)

    device_free = [0.0]
    next_run = [int(rng.integers(10, 2**20))]   # the runtime's run ids: one counter for every program
    host_run = [int(rng.integers(-2**31, -2**30))]
    spans: list = []                             # (start, end) of every execution, as built

    def execute(module: str, dispatched: float, lag: float) -> None:
        """One execution of `module`: on the device once it is free, queued behind the last."""
        next_run[0] += int(rng.integers(1, 3))
        run_id = str(next_run[0])
        d = start = round(max(device_free[0], dispatched + lag), 3)
        if tpu:
            host_run[0] -= 1
            x(host, dispatched, r(5, 15), "CommonPjRtLoadedExecutable::Execute ", run_id=str(host_run[0]))
            x(device, dispatched + r(1, 5), r(1, 5), "DoEnqueueProgram", run_id=str(host_run[0]))
        for op in rng.choice(OPS, int(rng.integers(2, 5)), replace=False):
            dur = r(0.5, 40)
            if tpu:
                x(ops_line, d, dur, str(op), process=chip, long_name=f"%{op} = f32[4] {op}()", bytes_accessed="52",
                  hlo_category="loop fusion", tf_op=f"{module[4:]}/{op}:")
            else:
                writer.cpu_operation(pid, int(rng.choice([host, device, eigen])), device, d, dur, str(op), module,
                                     run_id, marker_dur=0.1)
            d = round(d + dur + r(0.2, 2), 3)
        end = round(d, 3)
        if tpu:
            writer.tpu_execution(chip, modules_line, start, end - start, module,
                                 int(rng.integers(10**18, 10**19, dtype=np.uint64)), run_id)
            x(steps_line, start, end - start, str(len(spans)), process=chip)
            x(eigen, end + r(1, 5), r(1, 4), "CompleteCallbacks", run_id=str(host_run[0]))
        else:
            writer.executor_wait(pid, device, end, r(0.1, 3), run_id)
            end = max(end, float(events[-1]["ts"]) + float(events[-1]["dur"]))
        spans.append((start, end))
        device_free[0] = end + r(0.5, 4)

    def build(t: float, cached: bool) -> float:
        """A program built on the host at t (lowered; compiled unless the cache held it); its end."""
        x(host, t, r(300, 900), "lower_sharding_computation")
        t += r(900, 1000)
        if cached:
            return t + r(50, 200)
        dur = r(2000, 6000)
        x(host, t, dur, "backend_compile_and_load")
        x(compiler, t + r(10, 40), dur - 100, "PjRtCpuClient::Compile" if not tpu else "PjRtCApiCompiler::Compile")
        if not tpu:
            x(codegen, t + r(100, 400), r(100, 900), "FusionCompiler::Compile", module="fusion_kernel_module")
        return t + dur + r(5, 20)

    def transfer(t: float, kind: str, tid: int = host) -> float:
        nest = TRANSFER_NESTS[kind]
        dur = r(8, 60)
        for depth, name in enumerate(nest):
            x(tid, t + depth * 0.5, dur - depth, name)
        return t + dur + r(1, 5)

    # Counts per step, varied so that an unsorted reading cannot match by luck; a program built, with
    # and without a compilation, and a copy somewhere in every trace.
    while True:
        compiles = [int(c) for c in rng.choice([0, 0, 1, 2], steps)]
        transfers = [int(c) for c in rng.choice([0, 1, 2, 3], steps)]
        programs = [int(c) for c in rng.integers(1, 6, steps)]
        if len(set(zip(compiles, transfers, programs))) > 1 and sum(compiles) >= 2 and sum(transfers) \
                and max(programs) >= 2:
            break
    cached = [bool(rng.random() < 0.5) for _ in range(sum(compiles))]
    cached[0], cached[1] = True, False
    t = r(5, 50)
    # Before the loop: the warm-up step, built, with a copy, its execution begun before the loop.
    t = build(t, False)
    t = transfer(t, "DevicePut")
    execute(str(rng.choice(MODULES)), t, 1.0)
    t = max(t, device_free[0] - r(5, 20)) + r(20, 60)
    warm_up = len(spans)
    gap_event_at = int(rng.integers(0, steps - 1))
    loader_at = int(rng.integers(0, steps))
    windows, built_so_far = [], 0
    # Events at a step's edges: one starting exactly at some step's start, one exactly at some step's
    # end (ts + dur), both inside the span as the lesson defines it. The steps' starts and ends are
    # multiples of 1/8 us, so ts + dur is exact in floating point and the edge is the edge.
    edges = {"start": int(rng.integers(steps)), "end": int(rng.integers(steps))}
    # Events that are not complete events ("ph": "X"): an instant event with a counted name inside a
    # step, and a begin/end pair named as the steps. Neither is a program built, a copy or a step.
    marker_at = int(rng.integers(steps))

    at_edges = {"compiles": [0] * steps, "transfers": [0] * steps}

    def edge_event(at: float, i: int) -> None:
        name = str(rng.choice(COMPILE_EVENTS + TRANSFER_EVENTS))
        x(host, at, r(0.5, 2), name)
        at_edges["compiles" if name in COMPILE_EVENTS else "transfers"][i] += 1

    for i in range(steps):
        start = t = math.ceil(t * 8) / 8
        if edges["start"] == i:
            edge_event(start, i)
        t += r(2, 6)
        if marker_at == i:
            events.append({"ph": "i", "s": "t", "pid": pid, "tid": host, "ts": round(t, 3),
                           "name": str(rng.choice(COMPILE_EVENTS + TRANSFER_EVENTS))})
            events.append({"ph": "B", "pid": pid, "tid": host, "ts": round(t + 0.5, 3), "name": scope})
            events.append({"ph": "E", "pid": pid, "tid": host, "ts": round(t + 1.5, 3)})
            t += 2
        work = ["compile"] * compiles[i] + ["transfer"] * transfers[i] + ["program"] * programs[i]
        rng.shuffle(work)
        module = str(rng.choice(MODULES))
        for kind in work:
            if kind == "compile":
                t = build(t, cached[built_so_far])
                built_so_far += 1
            elif kind == "transfer":
                t = transfer(t, str(rng.choice(TRANSFER_EVENTS)))
            else:
                dispatch = r(5, 40)
                x(host, t, dispatch, f"PjitFunction({module[4:]})")
                x(host, t + 0.1, dispatch - 0.2, f"PjitFunction({module[4:]})")
                if not tpu:
                    x(host, t + 1, dispatch - 2, "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice")
                # the device runs it once the host has dispatched it, sometimes much later (queued)
                execute(module, t + 1, r(0.5, 4) if rng.random() < 0.6 else r(30, 400))
                t += dispatch + r(0.5, 3)
            if rng.random() < 0.5:
                x(host, t + 0.2, r(0.5, 3), str(rng.choice(HOST_NOISE)))
                t += r(4, 6)
        t = math.ceil((t + r(2, 6)) * 8) / 8
        x(host, start, t - start, scope, step_num=str(i))
        windows.append((start, t))
        if edges["end"] == i:
            edge_event(t, i)
        if i == loader_at:  # a data-loading thread copies the next batch meanwhile: not this step's
            transfer(start + r(1, 3), "DevicePutWithSharding", tid=loader)
        t += r(3, 8)
        if i == gap_event_at:  # after the step's scope: logging, no step's
            t = transfer(t, "np.asarray(jax.Array)") + r(1, 3)
            t = build(t, False) + r(1, 3)
        if rng.random() < 0.3:  # another scope whose name extends the step's
            x(host, t, r(2, 6), f"{scope}_logging")
            t += r(8, 12)
        t += r(2, 10)
    # After the loop: waiting for the result, then a copy and a program built that are no step's.
    x(host, t, max(device_free[0] - t, 1.0), "$api.py:3102 block_until_ready")
    t = max(t, device_free[0]) + r(5, 10)
    t = transfer(t, "np.asarray(jax.Array)")
    build(t, bool(rng.random() < 0.5))
    # The waiting share of each step, from the spans as built: the device idle between consecutive
    # executions that start inside the step, over the step's length.
    loop_runs = sorted(spans[warm_up:])
    waiting = []
    for start, end in windows:
        mine = [s for s in loop_runs if start <= s[0] <= end]
        waiting.append(sum(max(0.0, b[0] - a[1]) for a, b in zip(mine, mine[1:])) / (end - start))
    compiles = [a + b for a, b in zip(compiles, at_edges["compiles"])]
    transfers = [a + b for a, b in zip(transfers, at_edges["transfers"])]
    evidence = {"steps": steps, "compiles": compiles, "transfers": transfers, "executions": sum(programs),
                "waiting": waiting}
    return {"trace": writer.trace(int(rng.integers(2**31)) if shuffle else None), "evidence": evidence}


def fresh_scope(rng: np.random.Generator) -> str:
    return str(rng.choice(["train", "step", "sgd_step", "train_step"])) + f"_{int(rng.integers(16**3)):03x}"


EVIDENCE_KEYS = ("steps", "compiles", "transfers", "executions", "waiting")


def evidence_problem(got, want: dict) -> str | None:
    got = plain(got) if isinstance(got, dict) else got
    if not isinstance(got, dict) or not set(EVIDENCE_KEYS) <= set(got):
        return (f"step_evidence should return a dict with {', '.join(map(repr, EVIDENCE_KEYS))}, got "
                + (f"the keys {sorted(map(str, got))}" if isinstance(got, dict) else type(got).__name__))
    if not isinstance(got["steps"], (int, np.integer)) or int(got["steps"]) != want["steps"]:
        return "step_evidence should count the complete events named exactly scope as the steps"
    for key, what in (("compiles", f"events named {COMPILE_EVENTS[0]!r} (one per program built, whether "
                                   "or not a compilation follows it)"),
                      ("transfers", f"events named one of {', '.join(TRANSFER_EVENTS)}")):
        per_step = counts(got[key])
        if per_step is None:
            return f"step_evidence's {key!r} should be a list of whole numbers, one per step"
        if per_step != want[key]:
            return (f"step_evidence's {key!r} should count, for each step in time order, the {what} on the "
                    "steps' thread that start inside the step's own span (events may be listed in any order)")
    executions = got["executions"]
    if isinstance(executions, bool) or not isinstance(executions, (int, np.integer)) \
            or int(executions) != want["executions"]:
        return ("step_evidence's 'executions' should count the executions (distinct run_ids: on the device's "
                "lines where the trace has a /device: process, else among every event) that start at or after "
                "the first step's start")
    waiting = numbers(got["waiting"])
    if waiting is None or len(waiting) != want["steps"]:
        return "step_evidence's 'waiting' should be a list of numbers, one per step"
    if any(abs(a - b) > WAITING_TOLERANCE for a, b in zip(waiting, want["waiting"])):
        return ("step_evidence's 'waiting' should give, for each step in time order, the time the device was idle "
                "between consecutive executions that start inside the step's span (from one's end to the next's "
                "start, none when they overlap), divided by the step's duration")
    return None


NO_STEPS = {"steps": 0, "compiles": [], "transfers": [], "executions": 0, "waiting": []}


def stepless_trace(rng: np.random.Generator) -> tuple[dict, str]:
    """A built trace and a scope none of its complete events is named: only a begin/end pair of
    that name, which is no step. Its evidence is NO_STEPS, whatever the trace ran."""
    built = built_trace(rng, int(rng.integers(2, 5)), fresh_scope(rng))
    names = {str(e.get("name")) for e in events_of(built["trace"])}
    scope = fresh_scope(rng)
    while any(name.startswith(scope) or scope.startswith(name) for name in names if name):
        scope = fresh_scope(rng)
    events = built["trace"]["traceEvents"]
    host = next(e for e in events if e.get("ph") == "X")
    at = round(float(rng.uniform(10, 100)), 3)
    events.append({"ph": "B", "pid": host["pid"], "tid": host["tid"], "ts": at, "name": scope})
    events.append({"ph": "E", "pid": host["pid"], "tid": host["tid"], "ts": round(at + 5, 3)})
    return built["trace"], scope


def check_step_evidence(step_evidence_, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for layout in LAYOUTS:
        steps, scope = int(rng.integers(4, 8)), fresh_scope(rng)
        built = built_trace(rng, steps, scope, layout=layout)
        problem = evidence_problem(step_evidence_(built["trace"], scope), built["evidence"])
        if problem:
            raise CheckFailed(problem + (" (a trace shaped like a TPU's)" if layout == "tpu" else ""))
    trace, scope = stepless_trace(rng)
    got = call_student("step_evidence for a trace with no step of the scope asked for", step_evidence_, trace, scope,
                       advice="return zero steps, empty lists and zero executions")
    if evidence_problem(got, NO_STEPS):
        raise CheckFailed("for a trace with no complete event named scope, step_evidence should return zero steps, "
                          "empty lists and zero executions")


# --- test_diagnose: the evidence of loops built at grading time -----------------------------------
def diagnose_plan(rng: np.random.Generator) -> list[tuple[str, str]]:
    """The loops to diagnose: one per cause in a variant drawn here, and those that the rule's order
    and its measures are about when they were not drawn: a recompiling loop that also copies (shape)
    and one that also runs many programs (retrace_per_example), a copying loop of three programs per
    step (asarray_batch, from jax 0.10) and a healthy one of two (with_metrics), and after
    per_example, a dispatch-bound loop that also copies; in an order drawn here."""
    from ..kernel.probes.diagnosis import VARIANTS

    loops = [(kind, str(rng.choice(VARIANTS[kind]))) for kind in CAUSES]
    for must in (("recompile", "shape"), ("recompile", "retrace_per_example"), ("transfer", "asarray_batch"),
                 ("none", "with_metrics")):
        if must not in loops:
            loops.append(must)
    if ("dispatch", "per_example") in loops:
        loops.append(("dispatch", str(rng.choice(["per_example_eager", "per_weight"]))))
    rng.shuffle(loops)
    return loops


def course_trace(kind: str, variant: str, steps: int, data) -> dict | None:
    """One of the course's loops, traced here, in this kernel, by the course's driver: the parsed
    trace, or None when no readable file came of it."""
    import tempfile

    from ..kernel.probes import diagnosis as probe

    x, y, lr, w, b = data
    with tempfile.TemporaryDirectory(prefix="trace-") as folder:
        report = probe.trace_built(kind, variant, steps, x, y, lr, w, b, trace_dir=folder)
    return parse_trace_file(report)[0]


def _instrument_missing(what: str) -> InstrumentMissing:
    import jax

    return InstrumentMissing(
        f"jax {jax.__version__}: {what}: performance-10 cannot be graded on this JAX; update the event names in "
        "perfcourse.checks.diagnosis (COMPILE_EVENTS, TRANSFER_EVENTS) and the lesson")


def course_evidence(kind: str, variant: str, steps: int, data) -> dict:
    """The evidence of one of the course's loops, traced in this kernel and read with the reference
    reading; InstrumentMissing unless it shows the loop's cause."""
    trace = course_trace(kind, variant, steps, data)
    evidence = step_evidence(trace, STEP_SCOPE) if trace is not None else None
    read = cause_of(evidence) if evidence is not None else "no trace"
    if read != kind:
        raise _instrument_missing(f"a trace of the course's own {variant} loop reads as {read!r}, not {kind!r}")
    return evidence


def written_cases(rng: np.random.Generator) -> list[tuple[dict, str]]:
    """Evidence written here, with values drawn here, on the edges of the rule that the course's
    loops do not reach on every machine: a loop that builds a program in every step and also shows
    every sign of dispatch (a retracing loop whose programs the persistent cache holds: lowering
    costs little there); a dispatch-bound loop that copies in every step; a copying loop of fewer
    than DISPATCH_LIMIT programs per step whose device waits most of the step (not dispatch); many
    programs per step on a device busy most of every step (not dispatch); the device waiting in one
    step of three only, and in exactly half the steps (not most: more than half); most steps waiting though the
    mean waiting is below the share, and the other way round (most steps, not the mean); exactly DISPATCH_LIMIT
    programs per step (at least the limit); a program built in
    one step only; as many programs built as steps, or more, but none in one step (not "every
    step"), and as many copies as steps, or more, but none in one step; no steps at all ("none").
    Each with its cause."""
    steps = int(rng.integers(3, 7))
    low = lambda: [round(float(rng.uniform(0.0, DISPATCH_SHARE * 0.9)), 4) for _ in range(steps)]  # noqa: E731
    high = lambda: [round(float(rng.uniform(DISPATCH_SHARE, 0.99)), 4) for _ in range(steps)]  # noqa: E731
    some = lambda: [int(v) for v in rng.integers(1, 4, steps)]  # noqa: E731
    many = int(rng.integers(DISPATCH_LIMIT, 40)) * steps
    few = int(rng.integers(steps, DISPATCH_LIMIT * steps))
    zeros = [0] * steps

    def ev(compiles, transfers, executions, waiting):
        return {"steps": steps, "compiles": list(compiles), "transfers": list(transfers), "executions": executions,
                "waiting": list(waiting)}

    one = [0] * steps
    one[int(rng.integers(steps))] = 1
    # As many programs built as steps, or more, but none in one step: not a program in every step.
    uneven = some()
    idle = int(rng.integers(steps))
    uneven[idle], uneven[(idle + 1) % steps] = 0, int(rng.integers(2, 4))
    # The same for copies: as many as steps, or more, but none in one step (a rule reading any copy,
    # or as many copies as steps, passed every run before).
    copies = some()
    copies[idle], copies[(idle + 1) % steps] = 0, int(rng.integers(2, 4))
    waits_once = low()
    waits_once[int(rng.integers(steps))] = DISPATCH_SHARE
    # Exactly half the steps waiting (an even count of steps of its own, whatever `steps` is): not
    # "most steps", so "at least half" misreads it as dispatch.
    even = 2 * int(rng.integers(2, 4))
    half = [round(float(rng.uniform(0.0, DISPATCH_SHARE * 0.9)), 4) for _ in range(even)]
    for i in rng.choice(even, size=even // 2, replace=False):
        half[int(i)] = DISPATCH_SHARE if rng.random() < 0.5 else round(float(rng.uniform(DISPATCH_SHARE, 0.99)), 4)
    half_waiting = {"steps": even, "compiles": [0] * even, "transfers": [int(v) for v in rng.integers(1, 4, even)],
                    "executions": int(rng.integers(DISPATCH_LIMIT, 40)) * even, "waiting": half}
    # "Most steps", not the mean: most steps waiting exactly the share and the rest not at all (a mean below
    # it), and one step waiting nearly all of it beside steps just under the share (a mean above it).
    most = [0.0] * steps
    for i in rng.choice(steps, size=steps // 2 + 1, replace=False):
        most[int(i)] = DISPATCH_SHARE
    once_long = [round(float(rng.uniform(0.85, 0.9)) * DISPATCH_SHARE, 4) for _ in range(steps)]
    once_long[int(rng.integers(steps))] = 0.99
    cases = [
        (ev(zeros, some(), DISPATCH_LIMIT * steps, high()), "dispatch"),  # at least the limit: the limit itself
        (ev(zeros, some(), many, most), "dispatch"),
        (ev(zeros, some(), many, once_long), "transfer"),
        (ev(some(), some(), many, high()), "recompile"),
        (ev(zeros, some(), many, high()), "dispatch"),
        (ev(zeros, some(), few, high()), "transfer"),
        (ev(zeros, zeros, many, low()), "none"),
        (ev(zeros, some(), many, waits_once), "transfer"),
        (half_waiting, "transfer"),
        (ev(one, zeros, many, high()), "dispatch"),
        (ev(uneven, some(), few, low()), "transfer"),
        (ev(zeros, copies, few, low()), "none"),
        (dict(NO_STEPS), "none"),
    ]
    order = rng.permutation(len(cases))
    return [cases[i] for i in order]


def _diagnosed(diagnose_, evidence: dict):
    answer = diagnose_({key: (list(value) if isinstance(value, list) else value) for key, value in evidence.items()})
    if not isinstance(answer, str) or answer not in CAUSES:
        raise CheckFailed(f"diagnose should return one of {', '.join(map(repr, CAUSES))}, got {answer!r}"[:200])
    return answer


def check_diagnose(diagnose_, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for evidence, kind in written_cases(rng):
        if not evidence["steps"]:
            answer = call_student("diagnose for the evidence of no steps", _diagnosed, diagnose_, evidence,
                                  advice="there is no loop to be slow, so its cause is 'none'")
            if answer != "none":
                raise CheckFailed(f"diagnose named {answer!r} for the evidence of no steps: there is no loop to be "
                                  "slow, so its cause is 'none' (a rule over every step holds for none)")
            continue
        if _diagnosed(diagnose_, evidence) != kind:
            raise CheckFailed(
                f"diagnose did not name the cause of evidence written at grading time ({evidence['steps']} steps, "
                f"{evidence['executions']} executions): apply the lesson's rule in its order (a program built in "
                f"every step; then {DISPATCH_LIMIT} or more executions per step with the device waiting between "
                f"them for at least {DISPATCH_SHARE:g} of the step in most steps, more than half of them; then a "
                "copy in every step)")
    for kind, variant in diagnose_plan(rng):
        # A few steps each: a recompiling loop compiles in every step, so each step costs a compilation.
        data = draw_data(rng, n=(6, 10) if kind == "dispatch" or variant == "retrace_per_example" else (12, 24))
        evidence = course_evidence(kind, variant, DIAGNOSE_STEPS, data)
        if _diagnosed(diagnose_, evidence) != kind:
            raise CheckFailed("diagnose did not name the cause that the evidence of a loop built at grading time "
                              "shows: apply the lesson's rule in its order (a program built in every step, then "
                              f"{DISPATCH_LIMIT} or more executions per step with the device waiting between them "
                              f"for at least {DISPATCH_SHARE:g} of the step in most steps, then a copy in every step)")


# --- test_fix_a, test_fix_b, test_fix_c --------------------------------------------------------------
FIXES = {"a": False, "b": True, "c": False}  # loop: does its factory take the batch as NumPy arrays


def loop_copies(trace, steps: list) -> int:
    """Copies on any thread of the process (a data loader's too), not only the steps' thread, that
    start within the loop: from the first step's start to the last step's end. A fixed loop has none:
    the course's driver builds it before the trace and waits for it after the last step."""
    first, last = float(steps[0]["ts"]), float(steps[-1]["ts"]) + float(steps[-1]["dur"])
    return sum(1 for e in complete(trace) if e.get("name") in TRANSFER_EVENTS and first <= float(e["ts"]) <= last)


def fix_problems(report, steps: int, plan: Plan, x, y, lr: float, w, b) -> list[str]:
    """What is wrong with the student's fixed loop, read here from the trace the course's driver wrote."""
    problem = report_problem(report, "the fixed loop could not be traced",
                             raised="building or running the fixed loop raised {}",
                             result_error="step(params) should return (params, loss) with params a pair (w, b): {}")
    if problem:
        return [problem]
    if report.get("no_trace"):
        return ["no trace was written while the fixed loop ran: do not start or stop a trace inside it"]
    if plan._asked != steps + 1:
        return ["the fixed loop's step was not called once per step"]
    trace, why = parse_trace_file(report)
    if trace is None:
        return [why]
    evidence = step_evidence(trace, STEP_SCOPE)
    found = scope_events(trace, STEP_SCOPE)
    if evidence["steps"] != steps:
        return [f"the trace does not show the loop's {steps} steps: do not annotate or trace inside step"]
    if any(evidence["compiles"]):
        return ["the fixed loop still compiles during its steps: make the jitted function once, when the loop "
                "is built, and call it with the same shapes and static arguments at every step"]
    if any(evidence["transfers"]) or loop_copies(trace, found):
        return ["the fixed loop still copies between host and device during its steps (on any thread: an upload "
                "on a loader thread is a copy in the loop too): put the batch on the device once, when the loop "
                "is built, pass only device arrays to jitted functions (a NumPy array or a Python float argument "
                "is copied at every call), and read no value back"]
    if evidence["executions"] > steps:
        return [f"the fixed loop runs {evidence['executions'] / steps:.3g} programs per step: make each step one "
                "jitted program (the gradient and the update together)"]
    runs = sorted(ts for ts in execution_starts(trace).values() if ts >= float(found[0]["ts"]))
    if len(runs) < steps:
        return ["the trace shows fewer program executions than steps: each step should run one jitted program"]
    if not _paced(trace, plan, found, runs, 1):
        return ["the trace does not show each step's program after the step began"]
    want_w, want_b, want_losses = sgd_numpy(w, b, x, y, lr, steps)
    try:
        got_w, got_b = report.get("params") or (None, None)
        numerics.check_close(got_w, want_w, "the weights after the steps", precision=numerics.FLOAT32)
        numerics.check_close(got_b, want_b, "the bias after the steps", precision=numerics.FLOAT32)
        numerics.check_close(np.ravel(report.get("losses")), want_losses, "the losses (one per step)",
                             precision=numerics.FLOAT32)
    except (CheckFailed, TypeError, ValueError) as failure:
        return [str(failure) if isinstance(failure, CheckFailed) else
                "step(params) should return (params, loss): the params a pair (w, b), the loss a scalar"]
    return []


def program_problems(program, x, y, lr: float, rng: np.random.Generator) -> list[str]:
    """The exported step, run here on parameters never sent: one step of gradient descent."""
    d = np.shape(x)[1]
    w = rng.uniform(-1.0, 1.0, d).astype(np.float32)
    b = np.float32(rng.uniform(-1.0, 1.0))
    try:
        import jax.numpy as jnp

        out = program.call(jnp.asarray(w), jnp.asarray(b))
        got_w, got_b, got_loss = (np.asarray(v, np.float64) for v in out)
    except Exception:  # noqa: BLE001 (what a program the student's kernel made does when run)
        return ["one step of the fixed loop, exported and run by the grader, did not run"]
    want_w, want_b, want_losses = sgd_numpy(w, b, x, y, lr, 1)
    try:
        numerics.check_close(got_w, want_w, "one step's weights, run by the grader", precision=numerics.FLOAT32)
        numerics.check_close(got_b, want_b, "one step's bias, run by the grader", precision=numerics.FLOAT32)
        numerics.check_close(got_loss, want_losses[0], "one step's loss, run by the grader",
                             precision=numerics.FLOAT32)
    except CheckFailed as failure:
        return [str(failure)]
    return []


def check_fix(factory, loop: str, rng: np.random.Generator | None = None) -> None:
    trace_instrument()
    rng = rng or np.random.default_rng()
    host = FIXES[loop]
    x, y, lr, w, b = draw_data(rng)
    steps = int(rng.integers(3, 6))
    paused = rng.choice(np.arange(1, steps + 1), 2, replace=False)  # plan index 0 is the warm-up
    plan = Plan(None, {int(i): float(rng.uniform(0.003, 0.008)) for i in paused})
    report = remote.probe("diagnosis.trace_fixed", factory, host, steps, plan, x, y, lr, w, b)
    problems = fix_problems(report, steps, plan, x, y, lr, w, b)
    if problems:
        raise CheckFailed(problems[0])
    specs = [([int(np.shape(x)[1])], "float32"), ([], "float32")]
    data = call_student("exporting one step of the fixed loop as one JAX program", remote.probe,
                        "diagnosis.export_fixed", factory, host, x, y, lr,
                        advice="keep step a function of params that JAX can trace (no float() or NumPy of a "
                        "traced value inside it)")
    program = programs.program_from(data, specs, what="one step of the fixed loop")
    problems = program_problems(program, x, y, lr, rng)
    if problems:
        raise CheckFailed(problems[0])
