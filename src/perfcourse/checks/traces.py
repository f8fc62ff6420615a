"""Reading a profiler trace: the one place that knows how JAX's profiler lays out its Perfetto JSON.

performance-06 (checks/profiling.py) and performance-10 (checks/diagnosis.py) read the same files,
the ones `jax.profiler.trace(..., create_perfetto_trace=True)` writes, and traces built to look like
them; a change in that layout is fixed here, once.

The layouts the course reads (jax 0.9.2 and 0.10.2 on a CPU; jax 0.10.2 on a TPU v5e, recorded in
tests/data/tpu-v5e):

- a CPU trace has one process, "/host:CPU". The runtime writes every XLA operation it runs as a
  complete event on one of its worker threads, with "hlo_op", "hlo_module" and "run_id" in its args;
  the executor's "wait for completion" event carries the run_id too (no "hlo_module").
- a TPU trace adds a process per chip, named "/device:TPU:0". Its line "XLA Ops" holds one event per
  operation (named as the operation, args "long_name", "hlo_category", "bytes_accessed", some
  "tf_op"; no "hlo_op", no "run_id"), and its line "XLA Modules" one event per execution of a compiled
  program, named "<module>(<program id>)", with a "run_id" (and no "hlo_module"). The host's launch
  events carry run_ids of the runtime's own, which are not executions.

So an execution is one run_id: where the trace has device processes, among the events there; on a
CPU, among every event. Timestamps and durations are microseconds; an event without a finite "ts"
(a complete event's, or "dur" where a span is read) is no event of the reading.
"""
from __future__ import annotations

import gzip
import io
import json
import math

from ..kernel.probes.trace_files import TRACE_FILE
from .student_calls import number  # a timestamp or a duration: a finite number, not a bool

MAX_TRACE_JSON = 64 << 20   # bytes of JSON a trace file may inflate to (the lessons' are a few MB)
TIMING_SLACK_US = 100.0     # clock granularity between a pause made by a check and the profiler's timestamps
# A device with a clock of its own (a TPU) has its events placed on the host's clock by the profiler,
# not exactly: in tests/data/tpu-v5e's trace of the loop with float(loss) (jax 0.10.2, v5e), the
# chip's executions appear up to 215 us before the host had finished launching them. The pauses the
# checks make are 3 ms or more.
DEVICE_CLOCK_SLACK_US = 1000.0
DEVICE_PROCESS = "/device:"
OPS_LINE, MODULES_LINE = "XLA Ops", "XLA Modules"


def parse_trace_file(report: dict):
    """The trace file's bytes a probe sent (`report["file"]`), decompressed and parsed here: (trace,
    None), or (None, why not). Nothing of the student's process judges what the file holds."""
    if "too_big" in report:
        return None, "the trace file is larger than the grader reads"
    if "unreadable" in report:
        return None, f"the trace file could not be read: {report['unreadable']}"
    data = report.get("file")
    if type(data) is not bytes or not data:
        return None, "the trace file did not come back"
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            text = handle.read(MAX_TRACE_JSON + 1)
        if len(text) > MAX_TRACE_JSON:
            return None, "the trace file is larger than the grader reads"
        trace = json.loads(text)
    except (OSError, EOFError, ValueError, RecursionError, UnicodeDecodeError) as exc:
        return None, f"the trace file is not gzip-compressed JSON ({type(exc).__name__})"
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        return None, "the trace file holds no 'traceEvents' list"
    return trace, None


def report_problem(report, could_not: str, **said: str) -> str | None:
    """What a trace probe's report says went wrong before any file is read: `could_not` when no
    report came back, else the message of the first key of `said` the report holds, in the order
    given ("raised", "returned", "result_error"), formatted with what the report says there; None
    when it holds none of them."""
    if not isinstance(report, dict):
        return could_not
    for key, message in said.items():
        if key in report:
            return message.format(report[key])
    return None


def returned_file_problem(report: dict, function: str, run: str) -> str | None:
    """What is wrong with the path of the trace file a student's `function` returned, as the probe
    saw it (*evidence*: the student's kernel reports paths): it must be the file JAX's profiler wrote
    under the folder handed over, and not the older run's that the folder already held; None when
    it is. `run` names the capture in the message ("this capture")."""
    if not report.get("path"):
        return f"{function} should return the path of the trace file as its second value"
    if not report.get("exists"):
        return f"the path {function} returned is not a file: return the {TRACE_FILE} it wrote"
    real, folder = str(report.get("real_path", "")), str(report.get("trace_dir", ""))
    if not real.endswith("/" + TRACE_FILE) or not real.startswith(folder.rstrip("/") + "/"):
        return (f"{function} should return the {TRACE_FILE} that jax.profiler.trace(trace_dir, "
                "create_perfetto_trace=True) wrote under trace_dir")
    if real == report.get("older") or (report.get("newest") and real not in report["newest"]):
        return f"{function} returned an older trace file, not the one {run} wrote"
    return None


# --- events ---------------------------------------------------------------------------------------
def events_of(trace) -> list[dict]:
    """The events of a trace (a dict with "traceEvents", or the list itself) that are dicts."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def complete(trace) -> list[dict]:
    """The complete events ("ph": "X") that have a timestamp."""
    return [e for e in events_of(trace) if e.get("ph") == "X" and number(e.get("ts")) is not None]


def thread(event) -> tuple:
    """(pid, tid): the thread an event ran on."""
    return event.get("pid"), event.get("tid")


def scope_events(trace, scope: str) -> list[dict]:
    """The complete events named exactly `scope` (an annotation's) with a duration, in time order."""
    return sorted((e for e in complete(trace) if e.get("name") == scope and number(e.get("dur")) is not None),
                  key=lambda e: float(e["ts"]))


# --- processes and lines --------------------------------------------------------------------------
def device_processes(trace) -> set:
    """The pids of the processes named /device:... (a TPU's or a GPU's); a CPU's trace has none."""
    return {e.get("pid") for e in events_of(trace) if e.get("ph") == "M" and e.get("name") == "process_name"
            and isinstance(e.get("args"), dict) and str(e["args"].get("name", "")).startswith(DEVICE_PROCESS)}


def device_lines(trace, line: str) -> set:
    """(pid, tid) of every thread named `line` in a device process."""
    devices = device_processes(trace)
    return {thread(e) for e in events_of(trace) if e.get("ph") == "M" and e.get("name") == "thread_name"
            and e.get("pid") in devices and isinstance(e.get("args"), dict) and e["args"].get("name") == line}


def clock_slack(trace) -> float:
    """How far apart the host's clock and the one executions are read on may be, in microseconds."""
    return DEVICE_CLOCK_SLACK_US if device_processes(trace) else TIMING_SLACK_US


def at_least(when: float, since: float, seconds: float, slack: float = TIMING_SLACK_US) -> bool:
    """Does the timestamp `when` lie at least `seconds` after `since` (both microseconds), to `slack`?"""
    return when >= since + seconds * 1e6 - slack


# --- operations and executions --------------------------------------------------------------------
def op_events(trace) -> list[dict]:
    """The complete events that are XLA operations: an "hlo_op" in args (the CPU runtime), or on a
    device's "XLA Ops" line (a TPU)."""
    ops_lines = device_lines(trace, OPS_LINE)
    return [e for e in complete(trace)
            if (isinstance(e.get("args"), dict) and "hlo_op" in e["args"]) or thread(e) in ops_lines]


def execution_events(trace) -> list[tuple[str, str | None, dict]]:
    """(run_id, module, event) for every event that is part of an execution: where the trace has
    device processes, the events there that carry a run_id (a TPU's "XLA Modules" line; the module
    is the event's name up to its program id); on a CPU every event that carries one (the module
    is the operation's "hlo_module"; the executor's wait names none)."""
    devices = device_processes(trace)
    found = []
    for event in complete(trace):
        args = event.get("args")
        if not isinstance(args, dict) or "run_id" not in args or (devices and event.get("pid") not in devices):
            continue
        module = args.get("hlo_module") if "hlo_module" in args else (
            str(event.get("name", "")).split("(")[0] if devices else None)
        found.append((str(args["run_id"]), str(module) if module is not None else None, event))
    return found


def device_runs(trace) -> dict:
    """{run_id: (module, start, end)}: every execution in the trace, over all of its events (on a CPU
    the executor's wait too, which ends after the operations)."""
    runs: dict = {}
    for run_id, module, event in execution_events(trace):
        start = float(event["ts"])
        end = start + max(number(event.get("dur")) or 0.0, 0.0)
        old = runs.get(run_id, (None, math.inf, -math.inf))
        runs[run_id] = (old[0] or module, min(old[1], start), max(old[2], end))
    return runs


def execution_starts(trace) -> dict:
    """{run_id: the start of its first event}: every execution in the trace."""
    return {run: start for run, (_, start, _) in device_runs(trace).items()}


def executions(trace, module: str) -> list[tuple[float, float]]:
    """(start, end) of each execution of the compiled program `module`, in time order, over the
    events that name it: on a CPU its operations (from the first's start to the last's end, without
    the executor's wait), on a TPU its event on the device's "XLA Modules" line."""
    spans: dict = {}
    for run_id, named, event in execution_events(trace):
        dur = number(event.get("dur"))
        if named != module or dur is None:
            continue
        ts = float(event["ts"])
        key = (event.get("pid"), run_id)  # one execution per chip it ran on
        start, end = spans.get(key, (math.inf, -math.inf))
        spans[key] = (min(start, ts), max(end, ts + dur))
    return sorted(spans.values())
