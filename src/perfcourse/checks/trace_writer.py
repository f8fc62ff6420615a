"""Writing traces as JAX's profiler writes them, for the traces the checks build at grading time.

performance-06 (checks/profiling.py) and performance-10 (checks/diagnosis.py) hand the student's
functions traces built here, laid out as a CPU or a TPU v5e writes them (the layouts are told in
checks/traces.py, which reads them). Each lesson draws its own loop; this writer writes each kind of
event one way: the processes and threads, complete events (microseconds, rounded to nanoseconds as
the profiler's JSON holds them), a CPU's operations with their "end:" markers and its executor's
wait, and a TPU's executions on its "XLA Modules" line.
"""
from __future__ import annotations

import random

HOST_PROCESS = "/host:CPU"
TPU_PROCESS = "/device:TPU:0"
EXECUTOR_WAIT = "ThunkExecutor::Execute (wait for completion)"  # carries the run_id; not an operation


class TraceWriter:
    """A trace's events, in the order written; `trace()` gives the trace. Complete events shorter
    than `shortest` microseconds are written that long."""

    def __init__(self, shortest: float = 0.0):
        self.events: list[dict] = []
        self._shortest = shortest

    def process(self, pid: int, name: str, sort_index: int | None = None) -> None:
        self.events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}})
        if sort_index is not None:
            self.events.append({"ph": "M", "pid": pid, "name": "process_sort_index",
                                "args": {"sort_index": sort_index}})

    def thread(self, pid: int, tid: int, name: str, sort_index: int | None = None) -> None:
        self.events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}})
        if sort_index is not None:
            self.events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                                "args": {"sort_index": sort_index}})

    def complete(self, pid: int, tid: int, ts: float, dur: float, name: str, **args) -> None:
        """A complete event ("ph": "X"), with `args` where there are any."""
        event = {"ph": "X", "pid": pid, "tid": tid, "ts": round(ts, 3), "dur": round(max(dur, self._shortest), 3),
                 "name": name}
        self.events.append({**event, "args": args} if args else event)

    def cpu_operation(self, pid: int, tid: int, marker_tid: int, ts: float, dur: float, op: str, module: str,
                      run_id: str, marker_dur: float = 0.0) -> None:
        """An XLA operation as the CPU runtime writes it (on a worker thread, `tid`), then its "end:"
        marker on the runtime's thread (`marker_tid`), which is no operation."""
        self.complete(pid, tid, ts, dur, op, hlo_op=op, hlo_module=module, run_id=run_id, device_ordinal="0")
        self.complete(pid, marker_tid, ts + dur, marker_dur, f"end: {op}")

    def executor_wait(self, pid: int, tid: int, ts: float, dur: float, run_id: str) -> None:
        """The CPU executor's wait for an execution: it carries the run_id and ends after the operations."""
        self.complete(pid, tid, ts, dur, EXECUTOR_WAIT, run_id=run_id, device_ordinal="0")

    def tpu_execution(self, chip: int, tid: int, ts: float, dur: float, module: str, program: int, run_id: str,
                      **args) -> None:
        """One execution on a TPU's "XLA Modules" line (`tid`): "<module>(<program id>)", with its run_id."""
        self.complete(chip, tid, ts, dur, f"{module}({program})", core_type="0", queue_id="0", replica_id="0",
                      run_id=run_id, **args)

    def trace(self, shuffle_seed: int | None = None) -> dict:
        """The trace, its events shuffled by `shuffle_seed` where one is given (a reading must not
        depend on the order events are listed in)."""
        events = list(self.events)
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(events)
        return {"displayTimeUnit": "ns", "traceEvents": events}
