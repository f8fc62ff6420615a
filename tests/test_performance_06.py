"""performance-06 (profile, don't guess): the hidden checks without a kernel, against the samples.

The samples in samples/performance-06/ are the right and wrong implementations: each one's cells
are run here in one namespace with the lesson's own definitions, and every hidden check is run on
them in-process (without a channel the probes run in this process), so each sample must pass exactly
the checks of the cells its `expect:` line gives full marks. Then the traces the checks build, the
judging of a probe's report, and the notebook's shape.
"""
import json

import numpy as np
import pytest

from conftest import ROOT

from perfcourse.checks import CheckFailed, InstrumentMissing, profiling
from perfcourse.course import read_notebook, source_notebook
from perfcourse.samples import build, discover

LESSON = "performance-06"
CHECKS = {
    "test_capture": lambda ns, rng: profiling.check_capture(ns["capture"], ns["load_trace"], rng=rng),
    "test_read_trace": lambda ns, rng: profiling.check_read_trace(ns["device_time_by_op"], ns["host_gaps"], rng=rng),
    "test_find_syncs": lambda ns, rng: profiling.check_find_syncs(ns["find_syncs"], rng=rng),
    "test_train": lambda ns, rng: profiling.check_train(ns["train"], rng=rng),
}
# The lesson's definitions the solution cells use (the notebook's imports and constants).
PRELUDE = """
import glob, gzip, json, os
import jax
import jax.numpy as jnp
import numpy as np
STEP_SCOPE = "train_step"
TRACE_FILE = "perfetto_trace.json.gz"
"""


def lesson_namespace(nb) -> dict:
    namespace: dict = {}
    exec(PRELUDE, namespace)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and ("SYNC_CALLS = (" in cell.source or meta.get("solution")):
            exec(cell.source, namespace)
    return namespace


SAMPLES = {s.case: s for s in discover(ROOT, [LESSON])}
GRADED = sorted(case for case, s in SAMPLES.items() if case != "release")


SOLUTION_CELL = {"test_capture": "capture", "test_read_trace": "read_trace", "test_find_syncs": "find_syncs",
                 "test_train": "train"}


@pytest.mark.parametrize("case", GRADED)
def test_each_sample_passes_exactly_the_checks_it_expects(case):
    """Every check on the cells a sample wrote itself (the solution's cells are the solution's)."""
    sample = SAMPLES[case]
    namespace = lesson_namespace(build(ROOT, sample))
    replaced = {target for verb, target, _ in sample.steps if verb == "replace"}
    rng = np.random.default_rng(sorted(SAMPLES).index(case))
    outcome, expected = {}, {}
    for cell, check in CHECKS.items():
        if case != "solution" and SOLUTION_CELL[cell] not in replaced:
            assert sample.expected[cell] > 0, f"{case} keeps the solution's {SOLUTION_CELL[cell]} cell"
            continue
        expected[cell] = sample.expected[cell] > 0
        try:
            check(namespace, rng)
            outcome[cell] = True
        except CheckFailed:
            outcome[cell] = False
    assert outcome == expected


def test_every_wrong_sample_loses_exactly_one_cell():
    for case, sample in SAMPLES.items():
        lost = [cell for cell, points in sample.expected.items() if points == 0]
        assert len(lost) in (0, 1, len(CHECKS)), (case, lost)
    assert sum(1 for s in SAMPLES.values() if 0 < sum(p == 0 for p in s.expected.values()) < len(CHECKS)) >= 4


# --- the traces built here ----------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(40))
def test_built_traces_agree_with_the_reference_analyses(seed):
    rng = np.random.default_rng(seed)
    steps = int(rng.integers(2, 10))
    synced = set(int(s) for s in rng.choice(steps, int(rng.integers(0, steps + 1)), replace=False))
    scope = profiling.fresh_scope(rng)
    built = profiling.built_trace(rng, steps, synced, scope)
    assert profiling.find_syncs(built["trace"], scope) == sorted(synced) == built["syncs"]
    assert np.allclose(profiling.host_gaps(built["trace"], scope), built["gaps"], rtol=1e-9, atol=1e-6)
    device = profiling.device_time_by_op(built["trace"])
    assert sorted(device) == sorted(built["device"])
    assert all(np.isclose(device[k], built["device"][k]) for k in device)
    assert all(g > 0 for g in built["gaps"])
    json.dumps(built["trace"])  # plain JSON, as a trace file holds


def test_built_traces_hold_the_distractors_a_wrong_reading_falls_for():
    rng = np.random.default_rng(7)
    built = profiling.built_trace(rng, 30, {3, 9}, "step_abc")
    events = profiling.complete(built["trace"])
    names = {e["name"] for e in events}
    assert "step_abc_logging" in names and any(n.startswith("end: ") for n in names)
    assert any(e["name"].startswith("ThunkExecutor") and "args" in e for e in events)
    hosts = {(e["pid"], e["tid"]) for e in events if e["name"] == "step_abc"}
    assert any(profiling.function_name(e["name"]) in profiling.SYNC_CALLS and (e["pid"], e["tid"]) not in hosts
               for e in events)
    order = [e["ts"] for e in events if e["name"] == "step_abc"]
    assert order != sorted(order)  # shuffled: the file's order is not time order


def test_a_wait_after_the_last_step_belongs_to_no_step():
    built = profiling.built_trace(np.random.default_rng(3), 5, set(), "s", shuffle=False)
    steps = profiling.scope_events(built["trace"], "s")
    last = steps[-1]
    extra = {"ph": "X", "pid": last["pid"], "tid": last["tid"], "ts": last["ts"] + last["dur"] + 1.0,
             "dur": 5.0, "name": "$array.py:297 __float__"}
    trace = {"traceEvents": built["trace"]["traceEvents"] + [extra]}
    assert profiling.find_syncs(trace, "s") == []
    extra["ts"] = steps[2]["ts"] + steps[2]["dur"] + 0.5  # in the gap after step 2: step 2's
    assert profiling.find_syncs(trace, "s") == [2]


def test_function_names_of_python_tracer_events():
    assert profiling.function_name("$array.py:297 __float__") == "__float__"
    assert profiling.function_name("np.asarray(jax.Array)") == "np.asarray(jax.Array)"
    assert profiling.function_name("$dtypes.py:512 itemsize") not in profiling.SYNC_CALLS


# --- judging a probe's report ---------------------------------------------------------------------
def test_train_report_with_a_wait_or_missing_scopes_is_refused():
    def event(name, ts, dur, **args):
        return {"ph": "X", "pid": 1, "tid": 2, "ts": ts, "dur": dur, "name": name, **({"args": args} if args else {})}

    steps, size, decay, shift = 3, 8, 0.5, 0.1
    params, losses = profiling.train_expected(steps, size, decay, shift)
    events = []
    for i in range(steps):
        events.append(event("train_step", 100.0 * i, 10.0))
        events.append(event("add", 100.0 * i + 20, 5.0, hlo_op="add", hlo_module="jit_s", run_id=str(i)))
    report = {"events": events, "metadata": [], "params": params, "losses": losses}
    assert profiling.train_problems(report, "s", steps, size, decay, shift) == []
    waited = {**report, "events": events + [event("$array.py:297 __float__", 150.0, 30.0)]}
    assert "waits for the device inside the loop" in profiling.train_problems(waited, "s", steps, size, decay, shift)[0]
    unscoped = {**report, "events": [e for e in events if e["name"] != "train_step"]}
    assert "annotation" in profiling.train_problems(unscoped, "s", steps, size, decay, shift)[0]
    wrong = {**report, "losses": losses + 1.0}
    assert "losses" in profiling.train_problems(wrong, "s", steps, size, decay, shift)[0]


def test_a_jax_whose_traces_read_otherwise_stops_the_checks_instead_of_failing_students(monkeypatch):
    """A trace layout a new JAX changed: the checks stop with InstrumentMissing (the grade report
    names it), never a CheckFailed that would be every student's mistake."""
    from perfcourse.kernel.probes import profiling as probe

    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    real = probe.complete_events
    # Executions no longer carry the module's name in their args:
    monkeypatch.setattr(profiling, "_trace_instrument_confirmed", False)
    monkeypatch.setattr(probe, "complete_events", lambda trace, python_calls=True: [
        {key: value for key, value in event.items() if key != "args"} for event in real(trace, python_calls)])
    for cell in ("test_train", "test_capture"):
        with pytest.raises(InstrumentMissing, match="a trace of the lesson's own training loop") as caught:
            CHECKS[cell](namespace, np.random.default_rng(0))
        assert not isinstance(caught.value, CheckFailed)
    # None of the calls that wait is named as the course expects (float() waits through __float__,
    # _value and the runtime's Await, so renaming one alone leaves the wait visible):
    monkeypatch.setattr(probe, "complete_events", real)
    monkeypatch.setattr(probe, "SYNC_CALLS", ())
    monkeypatch.setattr(profiling, "SYNC_CALLS", ())
    with pytest.raises(InstrumentMissing, match="shows no wait"):
        CHECKS["test_train"](namespace, np.random.default_rng(0))
    # This JAX: confirmed once, then the checks judge the submission.
    monkeypatch.undo()
    monkeypatch.setattr(profiling, "_trace_instrument_confirmed", False)
    CHECKS["test_train"](namespace, np.random.default_rng(0))
    assert profiling._trace_instrument_confirmed


def test_load_trace_is_judged_on_file_bytes_a_forged_probe_can_only_echo(monkeypatch):
    from perfcourse.kernel.probes import profiling as probe

    handed = []

    def echo(load_trace, data, trace_dir=None):  # a probe replaced in the student's kernel
        handed.append(data)
        return {"returned": data}

    monkeypatch.setattr(probe, "load_written", echo)
    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    with pytest.raises(CheckFailed, match="load_trace should return the file's JSON"):
        CHECKS["test_capture"](namespace, np.random.default_rng(0))
    assert type(handed[0]) is bytes and handed[0][:2] == b"\x1f\x8b"  # gzip's magic, not the trace


def test_capture_report_of_an_older_file_is_refused():
    def older(fn, trace_dir):
        import glob
        import os
        fn()
        found = glob.glob(os.path.join(trace_dir, "**", profiling.TRACE_FILE), recursive=True)
        return None, min(found, key=os.path.getmtime)

    with pytest.raises(CheckFailed, match="older trace file|perfetto_trace"):
        profiling.check_capture(older, lambda path: None, rng=np.random.default_rng(1))


# --- the notebook -----------------------------------------------------------------------------------
def test_the_notebook_grades_four_cells_of_three_points_and_names_its_tasks():
    nb = read_notebook(source_notebook(ROOT, LESSON))
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
              for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert graded == dict.fromkeys(CHECKS, 3)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for n in range(1, 5):
        assert f"Task {n}:" in text
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            public = cell.source.split("### BEGIN HIDDEN TESTS")[0]
            assert "perfcourse" not in public and "### BEGIN HIDDEN TESTS" in cell.source
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_the_lesson_and_the_checks_name_the_same_waiting_calls():
    nb = read_notebook(source_notebook(ROOT, LESSON))
    namespace = lesson_namespace(nb)
    assert tuple(namespace["SYNC_CALLS"]) == profiling.SYNC_CALLS
    for name in ("$array.py:297 __float__", "np.asarray(jax.Array)", "train_step"):
        assert namespace["function_name"](name) == profiling.function_name(name)
