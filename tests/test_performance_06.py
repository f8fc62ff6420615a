"""performance-06 (profile, don't guess): the hidden checks without a kernel, against the samples.

The samples in samples/performance-06/ are the right and wrong implementations: each one's cells
are run here in one namespace with the lesson's own definitions, and every hidden check is run on
them in-process (without a channel the probes run in this process), so each sample must pass exactly
the checks of the cells its `expect:` line gives full marks. Then the traces the checks build, the
judging of a probe's report, and the notebook's shape.
"""
import gzip
import json

import numpy as np
import pytest

import served_agent
from conftest import ROOT

from perfcourse.checks import CheckFailed, InstrumentMissing, MachineBusy, profiling, traces
from perfcourse.grading.execute import GRADER_ERRORS
from perfcourse.course import read_notebook, source_notebook
from perfcourse.samples import build, discover

LESSON = "performance-06"
CHECKS = {
    "test_capture": lambda ns, rng: profiling.check_capture(ns["capture"], ns["load_trace"], rng=rng),
    "test_read_trace": lambda ns, rng: profiling.check_read_trace(ns["device_time_by_op"], ns["host_gaps"], rng=rng),
    "test_find_syncs": lambda ns, rng: profiling.check_find_syncs(ns["find_syncs"], rng=rng),
    "test_train": lambda ns, rng: profiling.check_train(ns["train"], rng=rng),
    "test_device_time": lambda ns, rng: profiling.check_device_time(ns["device_seconds_per_call"], rng=rng),
    "test_three_numbers": lambda ns, rng: profiling.check_three_numbers(ns["three_numbers"], rng=rng),
}
# The lesson's definitions the solution cells use (the notebook's imports and constants).
PRELUDE = """
import glob, gzip, json, os, time
import jax
import jax.numpy as jnp
import numpy as np
STEP_SCOPE = "train_step"
TRACE_FILE = "perfetto_trace.json.gz"
CALLS = 20
"""


def lesson_namespace(nb) -> dict:
    namespace: dict = {}
    exec(PRELUDE, namespace)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and ("SYNC_CALLS = (" in cell.source or "def line_names(" in cell.source
                                         or meta.get("solution")):
            exec(cell.source, namespace)
    return namespace


SAMPLES = {s.case: s for s in discover(ROOT, [LESSON])}
GRADED = sorted(case for case, s in SAMPLES.items() if case != "release")


def timed(case: str) -> bool:
    """Does judging this sample run the three numbers' instrument (a second or more of held calls)?"""
    return case == "solution" or any(verb == "replace" and target == "three_numbers"
                                     for verb, target, _ in SAMPLES[case].steps)


SOLUTION_CELL = {"test_capture": "capture", "test_read_trace": "read_trace", "test_find_syncs": "find_syncs",
                 "test_train": "train", "test_device_time": "device_time", "test_three_numbers": "three_numbers"}


@pytest.mark.parametrize("case", [pytest.param(case, marks=pytest.mark.slow) if timed(case) else case
                                  for case in GRADED])
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
@pytest.mark.parametrize("layout", profiling.LAYOUTS)
@pytest.mark.parametrize("seed", range(40))
def test_built_traces_agree_with_the_reference_analyses(seed, layout):
    rng = np.random.default_rng(seed)
    steps = int(rng.integers(2, 10))
    synced = set(int(s) for s in rng.choice(steps, int(rng.integers(0, steps + 1)), replace=False))
    scope = profiling.fresh_scope(rng)
    built = profiling.built_trace(rng, steps, synced, scope, layout=layout)
    assert profiling.find_syncs(built["trace"], scope) == sorted(synced) == built["syncs"]
    assert np.allclose(profiling.host_gaps(built["trace"], scope), built["gaps"], rtol=1e-9, atol=1e-6)
    device = profiling.device_time_by_op(built["trace"])
    assert sorted(device) == sorted(built["device"])
    assert all(np.isclose(device[k], built["device"][k]) for k in device)
    assert all(g > 0 for g in built["gaps"])
    json.dumps(built["trace"])  # plain JSON, as a trace file holds
    if layout == "tpu":  # no "hlo_op" anywhere: the operations are known by their line only
        assert not any("hlo_op" in (e.get("args") or {}) for e in traces.events_of(built["trace"]))
        module = next(e["name"] for e in traces.complete(built["trace"]) if e.get("tid") == 2)
        assert len(traces.executions(built["trace"], module.split("(")[0])) == steps


def test_built_traces_hold_the_distractors_a_wrong_reading_falls_for():
    rng = np.random.default_rng(7)
    built = profiling.built_trace(rng, 30, {3, 9}, "step_abc")
    events = traces.complete(built["trace"])
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
    steps = traces.scope_events(built["trace"], "s")
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


@pytest.mark.parametrize("layout", profiling.LAYOUTS)
@pytest.mark.parametrize("seed", range(20))
def test_built_program_traces_hold_the_module_and_what_a_wrong_reading_takes_in(seed, layout):
    rng = np.random.default_rng(seed)
    built = profiling.built_program_trace(rng, layout)
    trace, module = built["trace"], built["module"]
    json.dumps(trace)
    assert 5 <= len(built["seconds"]) == len(traces.executions(trace, module))
    assert np.isclose(profiling.device_seconds_per_call(trace, module), np.median(built["seconds"]), rtol=1e-12)
    assert all(1e-5 < s < 1e-3 for s in built["seconds"])
    # the other programs: one whose name extends the module's, each execution longer than any of the module's
    names = {e["name"].split("(")[0] for e in traces.complete(trace) if e.get("tid") == 2} if layout == "tpu" else \
        {(e.get("args") or {}).get("hlo_module") for e in traces.complete(trace)} - {None}
    others = names - {module}
    assert len(others) == 2 and any(n.startswith(module) for n in others)
    assert min(min(profiling.device_seconds(trace, n)) for n in others) > max(built["seconds"])
    if layout == "cpu":  # the runtime's wait carries each execution's run_id and ends after it
        assert any(e["name"].startswith("ThunkExecutor") and "run_id" in e["args"] for e in traces.complete(trace))
    else:
        assert not any("hlo_op" in (e.get("args") or {}) for e in traces.complete(trace))


def test_the_device_time_check_takes_seconds_and_refuses_the_other_readings():
    rng = np.random.default_rng(3)
    profiling.check_device_time(profiling.device_seconds_per_call, rng=rng)
    with pytest.raises(CheckFailed, match="seconds"):
        profiling.check_device_time(lambda trace, module: profiling.device_seconds_per_call(trace, module) * 1e6,
                                    rng=rng)
    with pytest.raises(CheckFailed, match="wrong device time"):  # the mean, not the median
        profiling.check_device_time(lambda trace, module: float(np.mean(profiling.device_seconds(trace, module))),
                                    rng=rng)


def three_report(run: dict, starts_us: list, length_us: float, **numbers) -> dict:
    """A report of the three numbers with a trace file of executions at `starts_us`, made up here."""
    events = [{"ph": "M", "pid": 7, "name": "process_name", "args": {"name": "/host:CPU"}},
              {"ph": "X", "pid": 7, "tid": 1, "ts": 0.0, "dur": 1.0, "name": "start"}]
    events += [{"ph": "X", "pid": 7, "tid": 2, "ts": ts, "dur": length_us, "name": "call",
                "args": {"hlo_op": "call", "hlo_module": run["module"], "run_id": str(i)}}
               for i, ts in enumerate(starts_us)]
    return {"numbers": numbers, "file": gzip.compress(json.dumps({"traceEvents": events}).encode())}


def planned_run(calls=4, hold=0.1, work=0.04, waited=False, unwaited=False) -> dict:
    """What this side would observe of an honest three_numbers on a quiet machine (or of one that
    waits for each queued call, or returns before the last queued call's work)."""
    queued_work = [profiling.QUEUED_WORK[k % 2] for k in range(calls - 1)] + [profiling.LAST_WORK]
    asked, t = [], 0.0
    kinds = ["first"] + ["sync"] * calls + ["traced"] * calls + ["queued"] * calls
    for k, kind in enumerate(kinds):
        asked.append(t)
        scale = queued_work[k - 2 * calls - 1] if kind == "queued" else 1.0
        t += hold + (work * scale if kind in ("first", "sync") or (kind == "queued" and waited) else 0.0) + 0.001
    returned = t + (0.0 if unwaited or waited else work * profiling.LAST_WORK)
    return {"calls": calls, "hold": hold, "module": "jit_work_1", "asked": asked, "returned": returned,
            "held": [hold] * len(asked), "queued_work": queued_work}


def test_the_three_numbers_judged_against_what_this_side_saw():
    run = planned_run()
    calls, hold, work = run["calls"], run["hold"], 0.04
    starts = [(k + 1) * (hold + 0.001) * 1e6 + 50.0 for k in range(calls)]
    honest = dict(latency=hold + work, throughput=hold + 0.001 + profiling.LAST_WORK * work / calls, device=work)
    assert profiling.three_numbers_problems(three_report(run, starts, work * 1e6, **honest), run) == ([], True)

    def problem(report, run=run):
        problems, decided = profiling.three_numbers_problems(report, run)
        assert decided
        return problems[0]
    # each number returned for another
    slow_throughput = {**honest, "throughput": hold + work}
    assert "throughput is longer" in problem(three_report(run, starts, work * 1e6, **slow_throughput))
    assert "device time is not" in problem(three_report(run, starts, work * 1e6, **{**honest, "device": hold + 0.011}))
    assert "latency is shorter" in problem(three_report(run, starts, work * 1e6, **{**honest, "latency": hold + 0.002}))
    assert "throughput is shorter" in problem(three_report(run, starts, work * 1e6, **{**honest, "throughput": work}))
    # the runs made the wrong way
    waited = planned_run(waited=True)
    assert "each waited for" in problem(three_report(waited, starts, work * 1e6, **honest), waited)
    unwaited = planned_run(unwaited=True)
    assert "before the last" in problem(three_report(unwaited, starts, work * 1e6, **honest), unwaited)
    # the function waited (freeing results it never waited for can block), but its clock stopped before
    assert "before the last" in problem(three_report(run, starts, work * 1e6, **{**honest, "throughput": hold + 0.001}))
    assert "not 4" in problem(three_report(run, starts[:3], work * 1e6, **honest))
    early = [s - hold * 1e6 for s in starts]
    assert "as they ran" in problem(three_report(run, early, work * 1e6, **honest))
    assert "called fn" in problem(three_report(run, starts, work * 1e6, **honest), {**run, "asked": run["asked"][1:]})
    # a queued run whose long calls cannot be told from short ones (one delayed on the channel) decides nothing
    first_long = 2 * calls + 1
    delayed = {**run, "asked": run["asked"][:first_long + 1] + [a + 0.05 for a in run["asked"][first_long + 1:]],
               "returned": run["returned"] + 0.05}
    problems, decided = profiling.three_numbers_problems(three_report(delayed, starts, work * 1e6, **honest), delayed)
    assert problems == [profiling.UNCLEAR] and decided is False
    # work far from its plan decides nothing
    assert profiling.three_numbers_problems(three_report(run, starts, 0.9 * hold * 1e6, **honest), run)[1] is False


# --- judging a probe's report ---------------------------------------------------------------------
def event(name, ts, dur, tid=2, **args):
    return {"ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "name": name, **({"args": args} if args else {})}


def as_file(events) -> dict:
    """A report's trace file: the bytes a probe sends, gzip-compressed JSON."""
    return {"file": gzip.compress(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}).encode())}


def test_train_report_with_a_wait_or_missing_scopes_is_refused():
    steps, size, decay, shift = 3, 16, 0.5, 0.1
    values = np.linspace(-1, 1, 8, dtype=np.float32)
    params, losses = profiling.train_expected(values, size, steps, decay, shift)
    plan = profiling.Plan(None, {1: 0.002})
    plan._asked = steps  # the steps this kernel counted
    events = []
    for i in range(steps):
        events.append(event("train_step", 10000.0 * i, 10.0))
        events.append(event("add", 10000.0 * i + 2500, 5.0, tid=3, hlo_op="add", hlo_module="jit_s", run_id=str(i)))
    report = {**as_file(events), "params": params, "losses": losses, "losses_on_device": True}

    def judge(report, plan=plan):
        return profiling.train_problems(report, "s", steps, plan, values, size, decay, shift)

    assert judge(report) == []
    waited = {**report, **as_file(events + [event("$array.py:297 __float__", 150.0, 30.0)])}
    assert "waits for the device inside the loop" in judge(waited)[0]
    unscoped = {**report, **as_file([e for e in events if e["name"] != "train_step"])}
    assert "annotation" in judge(unscoped)[0]
    assert "losses" in judge({**report, "losses": losses + 1.0})[0]
    assert "still on the device" in judge({**report, "losses_on_device": False})[0]  # a list, or NumPy numbers
    unsaid = {key: value for key, value in report.items() if key != "losses_on_device"}
    assert "still on the device" in judge(unsaid)[0]  # a report that does not say is not believed
    # Step 1 began, the grader paused 2 ms before its dispatch: its execution cannot start 1.5 ms in.
    early = [dict(e, ts=e["ts"] - 1000.0) if e.get("args", {}).get("run_id") == "1" else e for e in events]
    assert "after the step began" in judge({**report, **as_file(early)})[0]
    fewer = profiling.Plan(None, {})
    fewer._asked = steps - 1  # this kernel saw one step less than the trace shows
    assert "once per step" in judge(report, fewer)[0]
    assert "not gzip-compressed JSON" in judge({**report, "file": b"{}"})[0]
    assert "did not come back" in judge({k: v for k, v in report.items() if k != "file"})[0]


def test_a_jax_whose_traces_read_otherwise_stops_the_checks_instead_of_failing_students(monkeypatch):
    """A trace layout a new JAX changed: the checks stop with InstrumentMissing (the grade report
    names it), never a CheckFailed that would be every student's mistake."""
    from perfcourse.kernel.probes import profiling as probe

    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    real = profiling.parse_trace_file

    def without_args(report):  # executions no longer carry the module's name in their args
        trace, why = real(report)
        if trace is not None:
            trace = {"traceEvents": [{k: v for k, v in e.items() if k != "args"} for e in trace["traceEvents"]]}
        return trace, why

    monkeypatch.setattr(profiling, "_trace_instrument_confirmed", False)
    monkeypatch.setattr(profiling, "parse_trace_file", without_args)
    for cell in ("test_train", "test_capture"):
        with pytest.raises(InstrumentMissing, match="a trace of the lesson's own training loop") as caught:
            CHECKS[cell](namespace, np.random.default_rng(0))
        assert not isinstance(caught.value, CheckFailed)
    # None of the calls that wait is named as the course expects (float() waits through __float__,
    # _value and the runtime's Await, so renaming one alone leaves the wait visible):
    monkeypatch.setattr(profiling, "parse_trace_file", real)
    monkeypatch.setattr(probe, "SYNC_CALLS", ())
    monkeypatch.setattr(profiling, "SYNC_CALLS", ())
    with pytest.raises(InstrumentMissing, match="shows no wait"):
        CHECKS["test_train"](namespace, np.random.default_rng(0))
    # This JAX: confirmed once, then the checks judge the submission.
    monkeypatch.undo()
    monkeypatch.setattr(profiling, "_trace_instrument_confirmed", False)
    CHECKS["test_train"](namespace, np.random.default_rng(0))
    assert profiling._trace_instrument_confirmed


def forged_capture_report(scope, name, plan, values, scale, offset, folder):
    """What a forged capture probe can send from its arguments: the dispatches the plan allows
    (asked for, never run), a well-formed trace file of them on a clock of its own, NumPy's result."""
    runs = 0
    while plan.next():
        runs += 1
    events = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
              {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "python"}},
              event(scope, 50.0, 400.0)]
    for i in range(runs):
        events.append(event("fusion", 100.0 + 3000.0 * i, 2900.0, tid=3, hlo_op="fusion",
                            hlo_module=f"jit_{name}", run_id=str(1000 + i)))
    result = np.asarray(values, np.float32)
    for _ in range(runs):
        result = np.tanh(result * np.float32(scale) + np.float32(offset))
    path = f"/tmp/{folder}/plugins/profile/run/{profiling.TRACE_FILE}"
    return {**as_file(events), "trace_dir": f"/tmp/{folder}", "older": "/tmp/old", "path": path, "real_path": path,
            "exists": True, "newest": [path], "result": result}


def test_a_trace_written_without_living_through_the_capture_is_refused():
    rng = np.random.default_rng(5)
    plan = profiling.Plan(7, {0: 0.004, 1: 0.006})
    values = rng.uniform(-1, 1, 8).astype(np.float32)
    report = forged_capture_report("region_1", "work_1", plan, values, 1.1, 0.2, "capture-1")
    problems = profiling.capture_problems(report, "region_1", "work_1", plan, values, 1.1, 0.2)
    assert problems and "when they ran" in problems[0]
    # The same events, shifted past the pauses this kernel made: what a real capture shows.
    trace, _ = traces.parse_trace_file(report)
    events = [dict(e, ts=e["ts"] + 10_000.0) if e.get("args", {}).get("run_id") else e for e in trace["traceEvents"]]
    assert profiling.capture_problems({**report, **as_file(events)}, "region_1", "work_1", plan, values, 1.1, 0.2) == []
    overlapping = [dict(e, dur=e["dur"] + 500.0) if e.get("args", {}).get("run_id") else e for e in events]
    assert "overlap" in profiling.capture_problems({**report, **as_file(overlapping)}, "region_1", "work_1", plan,
                                                   values, 1.1, 0.2)[0]


def test_a_forged_capture_probe_earns_nothing(monkeypatch):
    from perfcourse.kernel.probes import profiling as probe

    def forged(capture, scope, name, size, plan, values, scale, offset, folder, trace_dir=None):
        return forged_capture_report(scope, name, plan, values, scale, offset, folder)

    monkeypatch.setattr(probe, "capture_region", forged)
    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    with pytest.raises(CheckFailed, match="when they ran"):
        CHECKS["test_capture"](namespace, np.random.default_rng(0))


def test_a_trace_file_the_channel_would_not_carry_is_refused():
    assert "larger" in traces.parse_trace_file({"too_big": 10 << 20})[1]
    bomb = gzip.compress(b" " * (traces.MAX_TRACE_JSON + 10))
    assert "larger" in traces.parse_trace_file({"file": bomb})[1]
    assert "traceEvents" in traces.parse_trace_file({"file": gzip.compress(b"[1, 2]")})[1]


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

        import jax
        jax.block_until_ready(fn())  # no trace at all (and no work left running for the next test)
        found = glob.glob(os.path.join(trace_dir, "**", profiling.TRACE_FILE), recursive=True)
        return None, min(found, key=os.path.getmtime)

    with pytest.raises(CheckFailed, match="older trace file|perfetto_trace"):
        profiling.check_capture(older, lambda path: None, rng=np.random.default_rng(1))


# --- over the channel ------------------------------------------------------------------------------
def test_over_the_channel_the_plan_is_asked_from_the_students_kernel_and_the_file_parsed_here():
    """The solution's functions in a namespace served by the real agent on a thread: the plan's calls
    and the trace file's bytes cross a real socket, and the trace of the agent's own calls inside each
    step shows no wait."""
    from perfcourse.checks import remote

    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    names = ["capture", "load_trace", "train"]
    with served_agent.served({name: namespace[name] for name in names}) as channel:
        found = channel.request("names", names)
        assert type(found["train"]) is remote.Remote
        profiling.check_capture(found["capture"], found["load_trace"], rng=np.random.default_rng(11))
        profiling.check_train(found["train"], rng=np.random.default_rng(12))


@pytest.mark.slow
def test_over_the_channel_the_three_numbers_instrument_is_held_and_timed_here():
    """The solution's three_numbers served by the real agent on a thread: each call of the instrument
    asks this side's Calls over a real socket (held here, counted and timed here, told when the function
    returned), and the trace file's bytes come back and are parsed here."""
    from perfcourse.checks import remote

    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    with served_agent.served({"three_numbers": namespace["three_numbers"]}) as channel:
        found = channel.request("names", ["three_numbers"])
        assert type(found["three_numbers"]) is remote.Remote
        profiling.check_three_numbers(found["three_numbers"], rng=np.random.default_rng(13))


# --- the notebook -----------------------------------------------------------------------------------
def test_the_notebook_grades_six_cells_of_three_points_and_names_its_tasks():
    nb = read_notebook(source_notebook(ROOT, LESSON))
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
              for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert graded == dict.fromkeys(CHECKS, 3)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for n in range(1, 7):
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


# --- traces the lesson's own captures wrote: a TPU v5e (jax 0.10.2), a CPU (jax 0.9.2 and 0.10.2) ---
RECORDED = ["tpu-v5e", "cpu-jax0.9.2", "cpu-jax0.10.2"]
STEPS = 8  # the lesson's loop


def recorded(folder: str, which: str) -> dict:
    with gzip.open(ROOT / "tests" / "data" / folder / f"performance-06-{which}.perfetto_trace.json.gz", "rt") as f:
        return json.load(f)


@pytest.mark.parametrize("folder", RECORDED)
def test_recorded_traces_read_as_each_backend_wrote_them(folder):
    """The checks' own reading and the solution's functions on real files: the step executed once per
    step, after the step began (to the clock's slack), operations found and summed, waits where the
    loop waits."""
    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    for which, waits in (("logged", list(range(STEPS - 1))), ("async", [])):
        trace = recorded(folder, which)
        steps = traces.scope_events(trace, profiling.STEP_SCOPE)
        runs = traces.executions(trace, "jit_train_step")
        assert len(steps) == len(runs) == STEPS, (which, len(steps), len(runs))
        slack = traces.clock_slack(trace)
        for step, (start, end) in zip(steps, runs):
            assert start >= float(step["ts"]) - slack and end > start
        assert profiling.find_syncs(trace, profiling.STEP_SCOPE) == waits
        assert namespace["find_syncs"](trace, profiling.STEP_SCOPE) == waits
        ops = profiling.device_time_by_op(trace)
        assert len(ops) >= 5 and all(v > 0 for v in ops.values())
        theirs = namespace["device_time_by_op"](trace)
        assert sorted(theirs) == sorted(ops) and all(np.isclose(theirs[k], ops[k]) for k in ops)
        assert np.allclose(namespace["host_gaps"](trace, profiling.STEP_SCOPE),
                           profiling.host_gaps(trace, profiling.STEP_SCOPE))
        events = traces.events_of(trace)
        if folder.startswith("tpu"):
            assert not any("hlo_op" in (e.get("args") or {}) for e in events)  # what the lesson teaches
            assert {"fusion", "multiply_reduce_fusion", "copy-start", "copy-done"} <= set(ops)
            assert slack == traces.DEVICE_CLOCK_SLACK_US
            # 8 operations per step, each on the device's XLA Ops line
            assert sum(1 for e in traces.op_events(trace) if e["name"] in ("fusion", "multiply_reduce_fusion")) \
                == 2 * STEPS
        else:
            assert "jit_train_step" in {e["args"]["hlo_module"] for e in traces.op_events(trace)}
            assert slack == traces.TIMING_SLACK_US
    # A reader of "hlo_op" alone finds nothing in a TPU's trace, everything in a CPU's.
    hlo_only = lesson_namespace(build(ROOT, SAMPLES["hlo-op-only"]))["device_time_by_op"]
    assert (hlo_only(recorded(folder, "logged")) == {}) == folder.startswith("tpu")


@pytest.mark.parametrize("folder", RECORDED)
def test_the_checks_judge_recorded_loops_as_they_ran(folder):
    """train's judging on the lesson's own loops, as recorded: the loop without a wait passes, the
    loop with float(loss) after each step is the wait the lesson plants."""
    values = np.linspace(-1, 1, 8, dtype=np.float32)
    params, losses = profiling.train_expected(values, 16, STEPS, 0.5, 0.1)
    for which, verdict in (("async", None), ("logged", "waits for the device inside the loop")):
        data = (ROOT / "tests" / "data" / folder / f"performance-06-{which}.perfetto_trace.json.gz").read_bytes()
        plan = profiling.Plan(None, {})
        plan._asked = STEPS
        problems = profiling.train_problems({"file": data, "params": params, "losses": losses,
                                             "losses_on_device": True}, "train_step",
                                            STEPS, plan, values, 16, 0.5, 0.1)
        assert (problems == []) if verdict is None else (verdict in problems[0]), (which, problems)


def test_built_tpu_traces_are_laid_out_as_the_recorded_one():
    real = recorded("tpu-v5e", "logged")
    built = profiling.built_trace(np.random.default_rng(4), 6, {2}, "s", layout="tpu")["trace"]

    def device_lines(trace):
        return {name for (pid, tid), name in
                {(e.get("pid"), e.get("tid")): e["args"]["name"] for e in traces.events_of(trace)
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}.items()
                if (pid, None) in {(e.get("pid"), None) for e in traces.events_of(trace) if e.get("ph") == "M"
                                   and e.get("name") == "process_name" and e["args"]["name"].startswith("/device:")}}
    assert device_lines(built) == device_lines(real)
    real_keys = set().union(*((e.get("args") or {}).keys() for e in traces.op_events(real)))
    for op in traces.op_events(built):
        assert set(op["args"]) <= real_keys and "long_name" in op["args"]
    real_module = set().union(*((e.get("args") or {}).keys() for e in traces.events_of(real)
                                if str(e.get("name", "")).startswith("jit_train_step(")))
    assert all(set(e["args"]) <= real_module for e in traces.complete(built) if e["name"].startswith("jit_step_"))


# --- the report's op table and the TPU figures the text quotes (issue 50) ------------------------------

def report_functions(*names: str) -> dict:
    """The report cell's functions `names`, defined beside the lesson's line_names (the report itself
    runs the student's functions and traces: not run here)."""
    import ast

    nb = read_notebook(source_notebook(ROOT, LESSON))
    namespace: dict = {}
    exec(next(c.source for c in nb.cells if "def line_names(" in c.source), namespace)
    report = next(c.source for c in nb.cells if "def op_rates(" in c.source)
    exec("\n\n".join(ast.unparse(node) for node in ast.parse(report).body
                     if isinstance(node, ast.FunctionDef) and node.name in names), namespace)
    return namespace


def test_the_op_table_gives_no_rate_to_the_halves_of_an_asynchronous_copy():
    """On the recorded TPU trace every copy-start and copy-done lasts about a hundredth of a microsecond:
    its bytes over that duration would read as millions of GB/s. The report names them without a rate,
    and gives the fusions theirs."""
    op_rates = report_functions("async_half", "op_rates")["op_rates"]
    rates = op_rates(recorded("tpu-v5e", "logged"))
    halves = [name for name in rates if name.split(".")[0] in ("copy-start", "copy-done")]
    assert len(halves) >= 2
    for name in halves:
        assert "async_half" in rates[name] and "gb_per_s" not in rates[name] and "tflop_per_s" not in rates[name]
    for name in ("fusion", "multiply_reduce_fusion"):
        assert rates[name]["executions"] == STEPS and 0 < rates[name]["gb_per_s"] < 2000
    assert op_rates(recorded("cpu-jax0.10.2", "logged")) == {}  # a CPU trace carries no counts


def tpu_recording() -> tuple[dict, bool]:
    """The TPU artifact's report, and whether it records the current text."""
    from perfcourse.artifacts.record import content_hash

    artifact = json.loads((ROOT / "artifacts" / "tpu" / f"{LESSON}.json").read_text())
    stdout = artifact["stdout"]
    current = artifact["contentHash"] == content_hash(read_notebook(source_notebook(ROOT, LESSON)))
    return json.loads(stdout[stdout.index("{"):]), current


# Each TPU figure the text quotes, and the range of the recorded value it stands for: a recording outside
# one means the text must change with it. The figures are rounded to what held from one recording to the
# next (the chip's device time barely moves; the host's round trip does).
THREE_NUMBER_FIGURES = {
    "three_numbers": [("latency_us", 550, 750), ("throughput_us", 125, 185), ("device_us", 92.5, 93.5)],
    "three_numbers_bfloat16": [("latency_us", 1150, 1450), ("throughput_us", 745, 775), ("device_us", 714, 726)],
}
THREE_NUMBER_RATES = {
    "three_numbers": [("latency", 24.5, 29.5), ("throughput", 92.5, 130.5), ("device", 183.5, 185.5)],
    "three_numbers_bfloat16": [("latency", 94, 116), ("throughput", 177.5, 183.5), ("device", 188.5, 192.5)],
}


def test_every_tpu_figure_in_the_text_is_the_recordings():
    """Issue 50: the text's TPU figures are the artifact's, not the issue's. Each table row and figure is
    in the text, and the recorded report lies within what it says. A row the recording does not hold yet
    (recorded before the text asked for it) waits for the TPU's next recording, and only then."""
    report, current = tpu_recording()
    text = " ".join(" ".join(c.source for c in read_notebook(source_notebook(ROOT, LESSON)).cells
                             if c.cell_type == "markdown").split())
    for row in ("| 2048 × 2048, float32 (17.2 GFLOP) | 0.6-0.7 ms, 25-29 TFLOP/s | 0.13-0.18 ms, 95-130 TFLOP/s "
                "| 93 µs, 184-185 TFLOP/s |",
                "| 4096 × 4096, bfloat16 (137 GFLOP) | 1.2-1.4 ms, 95-115 TFLOP/s | 0.75-0.77 ms, 178-183 TFLOP/s "
                "| 0.72 ms, 189-192 TFLOP/s |",
                "the 2048 product reached 93-94% of it and the 4096 product 96-97%",
                "the median gap was about 1 ms with `float(loss)` and about 4 µs without it",
                "each execution of the step took about 4 µs of the chip's time",
                "moved from one recording to the next: about 0.1 ms in one, 1.4 ms in another",
                "read a device's times against the host's to about a millisecond, not better",
                "The half a millisecond between latency and device time",
                "Queued calls cost the host about 0.12-0.17 ms each on that machine",
                "the product's fusion lies on its device-time point"):
        assert row in text, row
    assert report["backend"] == "tpu"
    for key, figures in THREE_NUMBER_FIGURES.items():
        if key not in report:
            assert not current, f"the TPU recording of the current text has no {key}"
            continue
        for field, low, high in figures:
            assert low <= report[key][field] <= high, (key, field, report[key][field])
        for name, low, high in THREE_NUMBER_RATES[key]:
            assert low <= report[key]["tflop_per_s"][name] <= high, (key, name)
    assert 0.925 <= report["three_numbers"]["tflop_per_s"]["device"] / 197 < 0.945  # 93-94%
    if "three_numbers_bfloat16" in report:
        assert 0.955 <= report["three_numbers_bfloat16"]["tflop_per_s"]["device"] / 197 < 0.975  # 96-97%
    three = report["three_numbers"]
    assert 400 <= three["latency_us"] - three["device_us"] <= 650
    on_the_point = [r for r in report["op_rates"].values() if abs(r.get("flop_per_byte", 0) - 2048 / 6) < 1
                    and abs(r["tflop_per_s"] / three["tflop_per_s"]["device"] - 1) < 0.02]
    assert len(on_the_point) == 1  # the float32 product's fusion, as the op profile reads it
    assert 110 <= np.median([end - start for start, end in report["calls_timeline_us"]["queued"]["calls"]]) <= 190
    logged, kept = report["with_float_loss"], report["losses_kept_on_device"]
    assert 700 <= np.median(logged["host_gap_us"]) <= 1500 and 2 <= np.median(kept["host_gap_us"]) <= 10
    runs = [end - start for t in (logged, kept) for start, end in t["first_steps_us"]["device"]]
    assert 3 <= np.median(runs) <= 5.5
    timeline = logged["first_steps_us"]
    # "about 0.1 ms in one, 1.4 ms in another", some ends after the wait in a third
    assert all(-1000 <= wait[1] - run[1] <= 2000 for wait, run in zip(timeline["wait"], timeline["device"]))
    if current:  # the op table as the report writes it now
        assert all("gb_per_s" not in v for k, v in report["op_rates"].items() if k.split(".")[0].endswith(
            ("-start", "-done")))


@pytest.mark.parametrize("said, raised", [([profiling.BUSY], MachineBusy), ([profiling.UNCLEAR], MachineBusy),
                                          (["the latency is shorter than one call"], CheckFailed)])
def test_runs_the_machine_disturbed_every_time_are_no_verdict(monkeypatch, said, raised):
    """Four runs that each decided nothing (the work never came out as planned, the queuing unclear) say
    so as MachineBusy, which the grade report names, never as the student's mistake; a mistake seen in
    disturbed runs is still the student's."""
    runs = []
    monkeypatch.setattr(profiling.remote, "probe", lambda *args: {})
    monkeypatch.setattr(profiling, "three_numbers_problems", lambda report, run: runs.append(run) or (said, False))
    with pytest.raises(raised) as caught:
        profiling.check_three_numbers(lambda *a, **k: None, rng=np.random.default_rng(0))
    assert len(runs) == profiling.THREE_RUNS and type(caught.value) is raised
    assert (raised is MachineBusy) == (GRADER_ERRORS.count(raised.__name__) == 1)
