"""checks/traces.py on the traces JAX wrote (tests/data: jax 0.9.2 and 0.10.2 on a CPU, 0.10.2 on a
TPU v5e): its two groupings of executions agree where they must, and a malformed event is no event."""
import pytest
from conftest import ROOT

from perfcourse.checks import traces

DATA = ROOT / "tests" / "data"
RECORDED = sorted(DATA.glob("*/*.perfetto_trace.json.gz"))


def read(path) -> dict:
    trace, why = traces.parse_trace_file({"file": path.read_bytes()})
    assert trace is not None, why
    return trace


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_executions_by_module_are_the_runs_of_that_module(path):
    """Per module, `executions` spans the same runs as `device_runs`: exactly on a TPU (one event per
    execution on its XLA Modules line), on a CPU the operations only, which the executor's wait
    outlasts."""
    trace = read(path)
    runs = traces.device_runs(trace)
    assert runs
    on_device = bool(traces.device_processes(trace))
    assert traces.clock_slack(trace) == (traces.DEVICE_CLOCK_SLACK_US if on_device else traces.TIMING_SLACK_US)
    modules = {module for module, _, _ in runs.values() if module}
    assert modules  # every recorded trace names its programs (1-3 modules)
    for module in modules:
        spans = traces.executions(trace, module)
        whole = sorted((start, end) for named, start, end in runs.values() if named == module)
        assert len(spans) == len(whole)
        if on_device:
            assert spans == whole
        else:
            assert all(s == w[0] and e <= w[1] for (s, e), w in zip(spans, whole))


def test_an_event_without_a_finite_time_is_none_of_the_reading():
    events = [{"ph": "X", "pid": 1, "tid": 1, "ts": 5.0, "dur": 2.0, "name": "s"},
              {"ph": "X", "pid": 1, "tid": 1, "ts": float("nan"), "dur": 2.0, "name": "s"},
              {"ph": "X", "pid": 1, "tid": 1, "ts": True, "dur": 2.0, "name": "s"},
              {"ph": "X", "pid": 1, "tid": 1, "ts": 9.0, "dur": "2", "name": "s"},
              {"ph": "X", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0, "name": "op",
               "args": {"hlo_module": "jit_f", "run_id": "7"}},
              {"ph": "X", "pid": 1, "tid": 1, "ts": 3.0, "dur": None, "name": "op",
               "args": {"hlo_module": "jit_f", "run_id": "7"}},
              {"ph": "B", "pid": 1, "tid": 1, "ts": 0.0, "name": "s"}, "not an event"]
    trace = {"traceEvents": events}
    assert [e["ts"] for e in traces.scope_events(trace, "s")] == [5.0]
    assert traces.executions(trace, "jit_f") == [(1.0, 2.0)]  # the event without a duration spans nothing
    assert traces.device_runs(trace) == {"7": ("jit_f", 1.0, 3.0)}  # ... but starts where it starts

