"""performance-03 (read the program): the hidden-test helper without a kernel, the notebook, the artifact."""
import contextlib
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import served_agent
from conftest import ROOT

from perfcourse.checks import remote, stages
from perfcourse.checks.stages import (COST_KEYS, ESTIMATE_FIELDS, MEMORY_FIELDS, backend_estimates,
                                      check_estimates_absent, check_hand_count, check_read_program_not_run,
                                      check_read_program_stages, estimate_problems, fresh_matmul_shapes,
                                      matmul_inputs, not_run_problems, read_watched, shapes, stage_problems,
                                      stand_in_cases)
from perfcourse.course import read_notebook
from perfcourse.kernel.probes.stages import CompiledStandIn, watched_workload

LESSON = "performance-03"


# Implementations a student might write, right and wrong, as plain functions. Without a channel
# the probes run in this process, so the checks grade them exactly as they grade a notebook.

def estimates_right(compiled):
    estimates, missing = {}, {}
    try:
        costs, why = compiled.cost_analysis(), "cost_analysis() returned None"
    except Exception as exc:
        costs, why = None, f"cost_analysis() raised {exc!r}"
    if isinstance(costs, (list, tuple)):
        costs, why = (costs[0] if costs else None), "empty list"
    for name, key in COST_KEYS.items():
        value = costs.get(key) if isinstance(costs, dict) else None
        estimates[name] = value
        if value is None:
            missing[name] = why
    try:
        memory, why = compiled.memory_analysis(), "memory_analysis() returned None"
    except Exception as exc:
        memory, why = None, f"memory_analysis() raised {exc!r}"
    for name, attribute in MEMORY_FIELDS.items():
        estimates[name] = getattr(memory, attribute, None)
        if estimates[name] is None:
            missing[name] = why
    return {**estimates, "missing": missing}


def estimates_attribute_error(compiled):
    """Right, in another idiom: EAFP with the exception types the backends raise."""
    found, missing = {}, {}
    try:
        costs = compiled.cost_analysis()
    except (NotImplementedError, RuntimeError) as exc:
        costs = exc
    if isinstance(costs, list):
        costs = costs[0] if costs else "an empty list"
    for name, key in COST_KEYS.items():
        try:
            found[name] = costs[key]
            if found[name] is None:
                missing[name] = "None"
        except (KeyError, TypeError, IndexError):
            found[name], missing[name] = None, f"no {key} in {costs!r}"
    try:
        memory = compiled.memory_analysis()
    except RuntimeError as exc:
        memory = exc
    for name, attribute in MEMORY_FIELDS.items():
        try:
            found[name] = getattr(memory, attribute)
        except AttributeError:
            found[name], missing[name] = None, f"no {attribute}"
    return {**found, "missing": missing}


def estimates_zero_when_missing(compiled):
    costs = compiled.cost_analysis() or {}
    costs = (costs[0] if costs else {}) if isinstance(costs, list) else costs
    memory = compiled.memory_analysis()
    found = {name: float(costs.get(key) or 0.0) for name, key in COST_KEYS.items()}
    found.update({name: int(getattr(memory, attr, 0) or 0) for name, attr in MEMORY_FIELDS.items()})
    return {**found, "missing": {}}


def estimates_none_only(compiled):
    costs, memory = compiled.cost_analysis(), compiled.memory_analysis()
    found = {name: None if costs is None else float(costs[key]) for name, key in COST_KEYS.items()}
    found.update({name: None if memory is None else getattr(memory, attr) for name, attr in MEMORY_FIELDS.items()})
    return {**found, "missing": {name: "none" for name, value in found.items() if value is None}}


def estimates_silent(compiled):
    """Right numbers and None where missing, but never says what is missing."""
    return {**estimates_right(compiled), "missing": {}}


def estimates_zero_is_missing(compiled):
    """Reads a real zero as 'no estimate': None, and listed as missing."""
    found = estimates_right(compiled)
    for name in ESTIMATE_FIELDS:
        if found[name] == 0:
            found[name] = None
            found["missing"][name] = "a zero means no estimate"
    return found


def read_program_right(fn, *args):
    traced = jax.jit(fn).trace(*args)
    lowered = traced.lower()
    compiled = lowered.compile()
    return {"jaxpr": traced.jaxpr, "lowered": lowered, "stablehlo": lowered.as_text(),
            "compiled": compiled, "estimates": estimates_right(compiled)}


def read_program_two_steps(fn, *args):
    """Right, in another idiom: make_jaxpr, then jit(...).lower from ShapeDtypeStructs."""
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), args)
    lowered = jax.jit(fn).lower(*specs)
    compiled = lowered.compile()
    return {"jaxpr": jax.make_jaxpr(fn)(*specs), "lowered": lowered, "stablehlo": lowered.as_text(),
            "compiled": compiled, "estimates": estimates_right(compiled)}


def read_program_lesson_shapes(fn, *args):
    specs = (jax.ShapeDtypeStruct((64, 32), jnp.float32), jax.ShapeDtypeStruct((32, 16), jnp.float32))
    return read_program_right(fn, *specs)


def read_program_that_runs(fn, *args):
    jax.block_until_ready(jax.jit(fn)(*args))
    return read_program_right(fn, *args)


def read_program_warms_arrays(fn, *args):
    """Runs the program, without waiting, only when it was given data."""
    program = read_program_right(fn, *args)
    if not any(isinstance(a, jax.ShapeDtypeStruct) for a in args):
        program["compiled"](*args)
    return program


def read_program_other_program(fn, *args):
    """Right shapes, wrong program: compiles a product of its own, not the workload."""
    program = read_program_right(fn, *args)
    compiled = jax.jit(lambda a, b: (a @ b) @ jnp.eye(b.shape[1], dtype=b.dtype)).lower(*args).compile()
    return {**program, "compiled": compiled, "estimates": estimates_right(compiled)}


def read_program_estimates_elsewhere(fn, *args):
    """Stages right, but the estimates of another program."""
    program = read_program_right(fn, *args)
    other = jax.jit(fn).lower(*(jnp.zeros((a.shape[0] + 1, *a.shape[1:]), a.dtype) if i == 0 else a
                                for i, a in enumerate(args))).compile()
    return {**program, "estimates": estimates_right(other)}


def read_program_printed(fn, *args):
    """The jaxpr as printed text, not the jaxpr."""
    program = read_program_right(fn, *args)
    return {**program, "jaxpr": str(program["jaxpr"])}


def read_program_no_text(fn, *args):
    return {**read_program_right(fn, *args), "stablehlo": ""}


def read_program_lesson_text(fn, *args):
    """The StableHLO text of the lesson's program, not of this one."""
    return {**read_program_right(fn, *args), "stablehlo": read_program_lesson_shapes(fn, *args)["stablehlo"]}


def fails(check, *args) -> str | None:
    try:
        check(*args)
    except AssertionError as exc:
        return str(exc)
    return None


# The helper.

def test_hand_count_and_fresh_shapes():
    assert stages.matmul_flops(7, 5, 3) == 210
    rng = np.random.default_rng(0)
    drawn = [fresh_matmul_shapes(rng) for _ in range(300)]
    assert all(min(s) >= 2 and max(s) <= 96 for s in drawn)
    assert stages.LESSON_SHAPES not in drawn and len(set(drawn)) > 250


def test_the_hand_count_is_checked_by_value():
    assert fails(check_hand_count, lambda m, k, n: 2 * m * k * n) is None
    assert fails(check_hand_count, lambda m, k, n: np.int64(2) * m * k * n) is None
    assert "2*m*k*n" in fails(check_hand_count, lambda m, k, n: m * k * n)
    assert "int" in fails(check_hand_count, lambda m, k, n: 2.0 * m * k * n)
    # Asking the compiler agrees where every dimension is at least 2, not where XLA rewrites it.
    def asked(m, k, n):
        return int(backend_estimates(jax.jit(lambda a, b: a @ b).lower(
            *matmul_inputs(None, m, k, n, specs=True)).compile())["flops"])

    assert fails(check_hand_count, asked) is not None


@pytest.mark.parametrize("right", [estimates_right, estimates_attribute_error])
def test_the_right_estimates_pass_every_stand_in(right):
    assert fails(check_estimates_absent, right) is None


@pytest.mark.parametrize("wrong,why", [
    (estimates_zero_when_missing, "invents zeros"),
    (estimates_none_only, "crashes on an exception, a list or an absent key"),
    (estimates_silent, "does not say what is missing"),
    (estimates_zero_is_missing, "turns a real zero into None"),
])
def test_wrong_estimates_are_caught(wrong, why):
    assert fails(check_estimates_absent, wrong) is not None, why


def test_stand_ins_script_every_kind_of_absence_with_fresh_numbers():
    cases = stand_in_cases(np.random.default_rng(1))
    answers = []
    for case in cases:
        compiled = CompiledStandIn(case.script["cost"], case.script["memory"])
        for method in ("cost_analysis", "memory_analysis"):
            try:
                answers.append(type(getattr(compiled, method)()).__name__)
            except Exception as exc:
                answers.append(type(exc).__name__)
    for kind in ("dict", "list", "NoneType", "NotImplementedError", "JaxRuntimeError", "RuntimeError",
                 "SimpleNamespace"):
        assert kind in answers
    assert any(all(v is None for v in case.expected.values()) for case in cases)
    assert any(all(v is not None for v in case.expected.values()) for case in cases)
    assert any(case.expected["flops"] == 0 and case.expected["temp_bytes"] == 0 for case in cases)
    again = stand_in_cases(np.random.default_rng(2))
    assert [c.expected for c in cases] != [c.expected for c in again]
    # An absent attribute is an AttributeError, as on a real memory-stats object.
    stats = CompiledStandIn({"returns": None}, cases[4].script["memory"]).memory_analysis()
    with pytest.raises(AttributeError):
        stats.temp_size_in_bytes


def test_estimate_problems_name_each_fault():
    expected = {"flops": 10.0, "bytes_accessed": None, "argument_bytes": 8, "output_bytes": 4, "temp_bytes": 0}
    good = {**expected, "missing": {"bytes_accessed": "absent key"}}
    assert estimate_problems(good, expected) == []
    assert estimate_problems({**good, "flops": 10}, expected) == []  # an int equal to the estimate is fine
    assert estimate_problems({**good, "flops": 11.0}, expected)
    assert estimate_problems({**good, "bytes_accessed": 0.0}, expected)
    assert estimate_problems({**good, "temp_bytes": None, "missing": {**good["missing"], "temp_bytes": "0"}},
                             expected)
    assert estimate_problems({**good, "missing": {}}, expected)
    assert estimate_problems({**good, "missing": {**good["missing"], "flops": "x"}}, expected)
    assert estimate_problems({**good, "missing": {"bytes_accessed": ""}}, expected)
    assert estimate_problems({k: v for k, v in good.items() if k != "output_bytes"}, expected)
    assert estimate_problems({**good, "flops": True}, {**expected, "flops": 1.0})
    assert estimate_problems(None, expected)
    # hidden numbers stay hidden
    assert all("10.0" not in p for p in estimate_problems({**good, "flops": 11.0}, expected))


def test_backend_estimates_normalize_every_return_shape():
    memory = {"returns": {"argument_size_in_bytes": 1, "output_size_in_bytes": 2, "temp_size_in_bytes": 3}}
    costs = {"flops": 5.0, "bytes accessed": 6.0}
    as_dict = backend_estimates(CompiledStandIn({"returns": costs}, memory))
    as_list = backend_estimates(CompiledStandIn({"returns": [costs]}, memory))
    assert as_dict == as_list == {"flops": 5.0, "bytes_accessed": 6.0, "argument_bytes": 1.0,
                                  "output_bytes": 2.0, "temp_bytes": 3.0}
    failing = backend_estimates(CompiledStandIn({"raises": ["RuntimeError", "no"]}, {"returns": None}))
    assert failing == dict.fromkeys(ESTIMATE_FIELDS)


def test_this_backend_estimates_the_hand_count_for_fresh_products():
    rng = np.random.default_rng()
    for _ in range(3):
        m, k, n = fresh_matmul_shapes(rng)
        compiled = jax.jit(lambda a, b: a @ b).lower(*matmul_inputs(rng, m, k, n, specs=True)).compile()
        found = backend_estimates(compiled)
        assert found["flops"] == 2 * m * k * n
        assert found["argument_bytes"] == (m * k + k * n) * 4 and found["output_bytes"] == m * n * 4


def test_the_watched_workload_is_seen_here_when_traced_and_when_run():
    rng = np.random.default_rng()
    body, executions = stages.WatchedProduct(5, 4, 3, 0.75, -0.25), stages.Executions()
    workload, specs = watched_workload(body, executions, [[5, 4], [4, 3]])
    a, b = matmul_inputs(rng, 5, 4, 3)
    compiled = jax.jit(workload).trace(*specs).lower().compile()
    assert body._traces == [[(5, 4), (4, 3)]] and body._runs == 0 and executions._values == []
    out = compiled(a, b)  # not waited for: the CPU runs the callback before the call returns
    compiled(a, b)
    assert executions._values == [float(a[0, 0])] * 2 and len(body._traces) == 1
    np.testing.assert_allclose(out, (np.asarray(a) @ np.asarray(b)) * 0.75 - 0.25, rtol=1e-5, atol=1e-5)
    workload(a, b)  # eagerly: the body itself is called with the data
    assert body._runs == 1 and len(executions._values) == 3
    with pytest.raises(TypeError):
        body(np.zeros((6, 4), np.float32), np.zeros((4, 3), np.float32))  # data of other shapes: nothing computed
    with pytest.raises(TypeError):
        body("a", "b")


def read_program_committed(fn, *args):
    """Right, in another idiom: the arrays placed on the device first, and specs that keep a sharding."""
    placed = [jax.device_put(a, jax.devices()[0]) if isinstance(a, jax.Array) else a for a in args]
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None)) for a in placed]
    lowered = jax.jit(fn).lower(*specs)
    compiled = lowered.compile()
    return {"jaxpr": jax.make_jaxpr(fn)(*specs), "lowered": lowered, "stablehlo": lowered.as_text(),
            "compiled": compiled, "estimates": estimates_right(compiled)}


def read_program_jit_of_jit(fn, *args):
    """Right, in another idiom: a jitted function jitted again (the program text holds a nested call)."""
    return read_program_right(jax.jit(fn), *args)


@pytest.mark.parametrize("right", [read_program_committed, read_program_jit_of_jit])
def test_programs_lowered_other_ways_are_judged_by_what_they_compute(right):
    assert fails(check_read_program_stages, right, estimates_right) is None
    assert fails(check_read_program_not_run, right, estimates_right) is None


def test_a_lowered_program_of_something_else_is_caught():
    def other_lowered(fn, *args):
        program = read_program_right(fn, *args)
        lowered = jax.jit(lambda a, b: a @ b).lower(*args)
        return {**program, "lowered": lowered, "stablehlo": lowered.as_text()}

    assert "'lowered' (compiled), run on fresh arrays, is not the workload's program" in fails(
        check_read_program_stages, other_lowered, estimates_right, 1)


def test_this_jax_reports_executions_on_the_calling_thread():
    stages._execution_instrument_confirmed = False
    stages.execution_instrument()
    assert stages._execution_instrument_confirmed


@pytest.mark.parametrize("right", [read_program_right, read_program_two_steps])
def test_a_program_read_without_running_passes(right):
    assert fails(check_read_program_not_run, right, estimates_right) is None
    assert fails(check_read_program_stages, right, estimates_right, 2) is None


@pytest.mark.parametrize("wrong,words", [
    (read_program_that_runs, "executed the workload 1 time"),
    (read_program_warms_arrays, "given arrays, executed"),
])
def test_running_the_workload_is_caught(wrong, words):
    assert words in fails(check_read_program_not_run, wrong, estimates_right)
    assert fails(check_read_program_stages, wrong, estimates_right, 1) is None  # that cell is not this mistake's


def test_running_needs_data_and_a_shape_only_read_is_required():
    rng = np.random.default_rng()
    reading = read_watched(read_program_that_runs, 6, 7, 8, rng, specs=True)
    assert "TypeError" in reading.raised and "ShapeDtypeStructs" in not_run_problems(reading, True, rng)[0]


def test_calling_the_workload_on_its_data_is_a_run():
    def eager(fn, *args):
        fn(*args)  # "to see the output shape"
        return read_program_right(fn, *args)

    assert "executed the workload 1 time(s)" in fails(check_read_program_not_run, eager, estimates_right)


@pytest.mark.parametrize("wrong,words", [
    (read_program_lesson_shapes, "traced the workload with shapes"),
    (read_program_estimates_elsewhere, "not estimates_from(compiled)"),
    (read_program_printed, "'jaxpr' should be a jaxpr"),
    (read_program_no_text, "'stablehlo' should be"),
    (read_program_lesson_text, "'stablehlo' is not the text of this lowered program"),
])
def test_stage_mistakes_are_caught_in_the_stages_cell_only(wrong, words):
    assert words in fails(check_read_program_stages, wrong, estimates_right, 1)
    assert fails(check_read_program_not_run, wrong, estimates_right) is None


def test_a_compiled_program_of_something_else_did_not_read_the_workload():
    # Run here on fresh arrays, its compiled program does not give the workload's values, nor report
    # its run as the workload handed over does: it is not what read_program read, so neither cell
    # takes its word that nothing ran.
    assert "differ from an independent NumPy computation" in fails(
        check_read_program_stages, read_program_other_program, estimates_right)
    assert "not the workload it was handed" in fails(check_read_program_not_run, read_program_other_program,
                                                     estimates_right)


def test_an_estimates_mistake_does_not_cost_the_stages_cells():
    for wrong in (estimates_zero_when_missing, estimates_zero_is_missing, estimates_silent):
        def read_program(fn, *args):  # the right stages, with this estimates_from, as in a notebook
            return {**read_program_right(fn, *args), "estimates": wrong(jax.jit(fn).lower(*args).compile())}

        assert fails(check_estimates_absent, wrong) is not None
        assert fails(check_read_program_stages, read_program, wrong, 1) is None
        assert fails(check_read_program_not_run, read_program, wrong) is None


def test_stage_problems_are_read_from_what_was_observed_and_verified_here():
    rng = np.random.default_rng()
    m, k, n = fresh_matmul_shapes(rng)
    reading = read_watched(read_program_right, m, k, n, rng, specs=False)
    assert reading.traces == [[(m, k), (k, n)]] and reading.runs == 0 and reading.reports == []
    assert stage_problems(reading, estimates_right, rng) == []
    reading.traces = []  # a read that never called the workload
    assert "never traced" in stage_problems(reading, estimates_right, rng)[0]
    reading.raised = "TypeError: x"
    assert stage_problems(reading, estimates_right, rng) == ["read_program raised TypeError: x"]


def test_shapes_read_every_kind_of_abstract_value():
    lowered = jax.jit(lambda a, b: a @ b).lower(jnp.ones((3, 4)), jax.ShapeDtypeStruct((4, 5), jnp.float32))
    assert shapes(lowered.in_avals) == shapes(lowered.args_info) == [(3, 4), (4, 5)]
    assert shapes(lowered.compile().out_info) == [(3, 5)]


# Over the channel: the student's functions live in a namespace served by the real agent on a
# thread, and the checks run here as in the trusted kernel (the calls, the lent workload and its
# reports all cross a real socket).

@contextlib.contextmanager
def served(namespace: dict):
    with served_agent.served(namespace) as channel:
        yield channel.request("names", sorted(namespace))


def test_over_the_channel_the_checks_question_the_students_own_objects():
    with served({"read_program": read_program_right, "estimates_from": estimates_right}) as found:
        assert type(found["read_program"]) is remote.Remote
        check_read_program_stages(found["read_program"], found["estimates_from"], 1)
        check_read_program_not_run(found["read_program"], found["estimates_from"])
        rng = np.random.default_rng()
        reading = read_watched(found["read_program"], 9, 8, 7, rng, specs=True)
        assert reading.traces == [[(9, 8), (8, 7)]] and reading.runs == 0 and reading.reports == []
        assert isinstance(reading.result["compiled"], jax.stages.Compiled)  # a stand-in, questioned here
        assert stage_problems(reading, found["estimates_from"], rng) == []
    with served({"read_program": read_program_warms_arrays}) as found:
        assert "executed the workload 1 time(s)" in fails(check_read_program_not_run, found["read_program"], None)


def forged_probes(monkeypatch, answer):
    """Replace the course's probe dispatcher, as a submission can in its own kernel."""
    from perfcourse.kernel import probes

    real = probes.run
    monkeypatch.setattr(probes, "run", lambda name, *args, **kwargs: answer(real, name, *args, **kwargs))


def test_a_probe_that_builds_no_workload_fails_both_cells_with_a_reason(monkeypatch):
    def answer(real, name, *args, **kwargs):
        if name == "stages.watched_workload":
            raise ValueError("no probe named that")
        return real(name, *args, **kwargs)

    forged_probes(monkeypatch, answer)
    with served({"read_program": read_program_right, "estimates_from": estimates_right}) as found:
        for check in (check_read_program_stages, check_read_program_not_run):
            assert "could not be built" in fails(check, found["read_program"], found["estimates_from"])


def test_a_forged_workload_without_its_reports_earns_neither_cell(monkeypatch):
    # The generic forger's answer to the workload probe: the trusted side's body without the report,
    # so its read_program can run the program unseen; it lowers for the lesson's shapes.
    def answer(real, name, *args, **kwargs):
        if name == "stages.watched_workload":
            body, _, shapes_ = args
            return (lambda a, b: body(a, b)), real(name, *args)[1]
        return real(name, *args, **kwargs)

    def cheat(fn, *args):
        if not any(isinstance(a, jax.ShapeDtypeStruct) for a in args):
            jax.jit(fn)(*args)  # runs it, unreported
        return read_program_lesson_shapes(fn, *args)

    forged_probes(monkeypatch, answer)
    with served({"read_program": cheat, "estimates_from": estimates_right}) as found:
        assert "traced the workload with shapes" in fails(check_read_program_stages, found["read_program"],
                                                          found["estimates_from"], 1)
        assert "not the workload it was handed" in fails(check_read_program_not_run, found["read_program"], None)


# The notebook.

def grade_cells():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade")}


def test_grade_cells_and_points():
    cells = grade_cells()
    assert {gid: c.metadata["nbgrader"]["points"] for gid, c in cells.items()} == {
        "test_estimates_absent": 3, "test_read_program_stages": 3,
        "test_read_program_not_run": 2, "test_hand_count": 2}


def test_public_tests_need_no_course_code_and_hidden_tests_read_no_printed_text():
    for cell in grade_cells().values():
        public, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert "perfcourse" not in public
        assert "perfcourse.checks" in hidden and "stages.check_" in hidden
        for text_reader in ("as_text(", "str(_program", "repr(", "pretty_print"):
            assert text_reader not in hidden


def test_the_watched_layer_lives_in_a_locked_instructor_cell_before_its_test():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    helper = nb.cells[ids.index("watched_layer")]
    meta = helper.metadata["nbgrader"]
    assert meta["locked"] and not meta["grade"] and not meta["solution"]
    assert ids.index("watched_layer") + 1 == ids.index("test_read_program_not_run")
    assert "def watched_layer" in helper.source and "def layer_runs" in helper.source
    test = grade_cells()["test_read_program_not_run"].source
    assert "def " not in test and "layer_runs()" in test  # nothing for the student's JAX to trace is defined there


# The artifact.

def committed():
    return json.loads((ROOT / "artifacts" / "cpu" / f"{LESSON}.json").read_text())


def test_artifact_has_a_flow_diagram():
    # The seed layout itself: tests/test_artifacts.py, for every lesson.
    diagram = committed()["diagram"]
    assert diagram["panel"]["steps"] == ["trace", "lower", "compile", "execute"]
    assert diagram["prediction"].endswith("?") and diagram["alt"] and diagram["reading"]


def test_artifact_report_holds_estimates_beside_hand_counts_and_measures_nothing():
    artifact = committed()
    report = json.loads(artifact["stdout"])
    assert report["time_measured"] is False and report["memory_measured"] is False
    assert report["stages_read"] == ["trace", "lower", "compile"]
    assert report["missing"] == {} and all(report["estimates"][k] is not None for k in ESTIMATE_FIELDS)
    assert report["estimates"]["flops"] == report["hand_count"]["flops"] == 2 * 64 * 32 * 16
    assert report["estimates"]["argument_bytes"] == report["hand_count"]["argument_bytes"] == (64 * 32 + 32 * 16) * 4
    assert report["estimates"]["output_bytes"] == report["hand_count"]["output_bytes"] == 64 * 16 * 4
    for row in report["matmul_flops"]:
        assert row["hand_count_flops"] == 2 * row["m"] * row["k"] * row["n"]
        if min(row["m"], row["k"], row["n"]) >= 2:
            assert row["estimated_flops"] == row["hand_count_flops"]
        else:  # XLA rewrote the product: the estimate describes the program it built
            assert row["estimated_flops"] == row["m"] * row["n"]
    assert 0 < report["max_abs_error"] < 1e-5

    flops, memory = artifact["data"]["panels"]
    assert flops["labels"] == [f"{r['m']}x{r['k']}x{r['n']}" for r in report["matmul_flops"]]
    assert [s["y"] for s in flops["series"]] == [[r["estimated_flops"] for r in report["matmul_flops"]],
                                                 [r["hand_count_flops"] for r in report["matmul_flops"]]]
    assert [s["y"] for s in memory["series"]] == [
        [report["estimates"]["argument_bytes"], report["estimates"]["output_bytes"]],
        [report["hand_count"]["argument_bytes"], report["hand_count"]["output_bytes"]],
        [report["hand_count_in_layout"]["argument_bytes"], report["hand_count_in_layout"]["output_bytes"]]]
    # A CPU stores the arrays as their shapes say: no tiles, and the count in the layout is the plain one.
    assert all(layout["tiling"] == [] for layout in report["layouts"].values())
    assert report["hand_count_in_layout"] == {k: report["hand_count"][k] for k in ("argument_bytes", "output_bytes")}


def report_layout_bytes():
    """The report cell's `layout_bytes`, taken from the source notebook."""
    cell = next(c.source for c in read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb").cells
                if c.get("id") == "cell-24")
    start = cell.index("def layout_bytes(")
    namespace = {"math": __import__("math"), "jnp": jnp}
    exec(cell[start:cell.index("\n\n\n", start)], namespace)
    return namespace["layout_bytes"]


def test_the_tpu_byte_counts_are_the_arrays_in_tiles():
    """The lesson's reading of the TPU artifact (24,576 argument and 8,192 output bytes for the layer,
    hand counts 10,240 and 4,096): 8 x 128 float32 tiles with each array's first dimension along the
    lanes give exactly those numbers; stored row by row, x alone would need more than the estimate."""
    from jax._src.layout import Layout

    layout_bytes = report_layout_bytes()
    tpu = json.loads(json.loads((ROOT / "artifacts" / "tpu" / f"{LESSON}.json").read_text())["stdout"])
    rows, lanes_first = Layout((0, 1), ((8, 128),)), Layout((1, 0), ((8, 128),))
    f32 = jnp.float32
    assert layout_bytes((64, 32), f32, rows) == 32_768 > tpu["estimates"]["argument_bytes"]
    sizes = [layout_bytes(shape, f32, lanes_first) for shape in ((64, 32), (32, 16), (64, 16))]
    assert sizes == [16_384, 8_192, 8_192]
    assert sizes[0] + sizes[1] == tpu["estimates"]["argument_bytes"] == 24_576
    assert sizes[2] == tpu["estimates"]["output_bytes"] == 8_192
    assert (tpu["hand_count"]["argument_bytes"], tpu["hand_count"]["output_bytes"]) == (10_240, 4_096)
    # No tiles (a CPU's layouts): the shape's own bytes; a small tile pads the minor dimensions only.
    assert layout_bytes((64, 32), f32, Layout((0, 1))) == layout_bytes((64, 32), f32, Layout((0, 1), ())) == 8_192
    assert layout_bytes((3, 5), f32, Layout((0, 1), ((4, 128),))) == 2_048  # performance-09's float32[3, 5]
    assert layout_bytes((), f32, Layout((), ((128,),))) == 4
    text = " ".join(next(c.source for c in read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb").cells
                         if c.get("id") == "cell-23").split())
    for claim in ("24,576 argument bytes and 8,192 output bytes, against hand counts of 10,240 and 4,096",
                  "64 rows x 128 lanes x 4 bytes = 32,768 bytes", "16,384 bytes", "together 24,576"):
        assert claim in text, claim


@pytest.mark.slow
def test_known_limit_a_copy_of_the_program_without_its_report_runs_unseen():
    """What checks/stages.py says stays evidence (adversarial/performance-03/runs-it-unreported.py): a
    read_program that runs the workload's program on the data, stripped of the debug callback that
    reports each execution, passes the not-run check; the workload did run."""
    from jax.extend import core

    from perfcourse.kernel.probes.programs import _without_debug_callbacks

    ran = []

    def read_program(fn, *args):
        if not any(isinstance(a, jax.ShapeDtypeStruct) for a in args):
            closed = jax.make_jaxpr(fn)(*args)
            quiet = core.jaxpr_as_fun(core.ClosedJaxpr(_without_debug_callbacks(closed.jaxpr), closed.consts))
            ran.append(jax.block_until_ready(quiet(*args)[0]).shape)
        traced = jax.jit(fn).trace(*args)
        compiled = traced.lower().compile()
        return {"jaxpr": traced.jaxpr, "lowered": traced.lower(), "stablehlo": traced.lower().as_text(),
                "compiled": compiled, "estimates": {}}
    stages.check_read_program_not_run(read_program, lambda compiled: {})
    assert len(ran) == 1
