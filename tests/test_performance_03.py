"""performance-03 (read the program): the hidden-test helper without a kernel, the notebook, the artifact."""
import json
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import ROOT

from perfcourse.checks import stages
from perfcourse.checks.stages import (COST_KEYS, ESTIMATE_FIELDS, MEMORY_FIELDS, StandInCompiled,
                                      backend_estimates, estimate_problems, flop_estimate_problems,
                                      fresh_matmul_shapes, matmul_inputs, shapes, stage_problems,
                                      stand_in_cases, watched_matmul)
from perfcourse.course import read_notebook

LESSON = "performance-03"


# Implementations a student might write, right and wrong, as plain functions.

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


def read_program_right(fn, *args):
    traced = jax.jit(fn).trace(*args)
    lowered = traced.lower()
    compiled = lowered.compile()
    return {"jaxpr": traced.jaxpr, "lowered": lowered, "stablehlo": lowered.as_text(),
            "compiled": compiled, "estimates": estimates_right(compiled)}


def read_program_lesson_shapes(fn, *args):
    specs = (jax.ShapeDtypeStruct((64, 32), jnp.float32), jax.ShapeDtypeStruct((32, 16), jnp.float32))
    return read_program_right(fn, *specs)


def read_program_that_runs(fn, *args):
    jax.block_until_ready(jax.jit(fn)(*args))
    return read_program_right(fn, *args)


def grade_estimates(student, rng):
    """The hidden absence check: the first stand-in a student's function gets wrong, or None."""
    for case in stand_in_cases(rng):
        try:
            problems = estimate_problems(student(case.compiled), case.expected)
        except Exception as exc:
            problems = [f"crashed: {exc!r}"]
        if problems:
            return case.name, problems
    return None


# The helper.

def test_hand_count_and_fresh_shapes():
    assert stages.matmul_flops(7, 5, 3) == 210
    rng = np.random.default_rng(0)
    drawn = [fresh_matmul_shapes(rng) for _ in range(300)]
    assert all(min(s) >= 2 and max(s) <= 96 for s in drawn)
    assert stages.LESSON_SHAPES not in drawn and len(set(drawn)) > 250


def test_the_right_estimates_pass_every_stand_in():
    assert grade_estimates(estimates_right, np.random.default_rng()) is None


@pytest.mark.parametrize("wrong,why", [
    (estimates_zero_when_missing, "invents zeros"),
    (estimates_none_only, "crashes on an exception, a list or an absent key"),
    (estimates_silent, "does not say what is missing"),
])
def test_wrong_estimates_are_caught(wrong, why):
    assert grade_estimates(wrong, np.random.default_rng()) is not None, why


def test_stand_ins_script_every_kind_of_absence_with_fresh_numbers():
    cases = stand_in_cases(np.random.default_rng(1))
    answers = []
    for case in cases:
        for method in ("cost_analysis", "memory_analysis"):
            try:
                answers.append(type(getattr(case.compiled, method)()).__name__)
            except Exception as exc:
                answers.append(type(exc).__name__)
    for kind in ("dict", "list", "NoneType", "NotImplementedError", "RuntimeError", "SimpleNamespace"):
        assert kind in answers
    assert any(all(v is None for v in case.expected.values()) for case in cases)
    assert any(all(v is not None for v in case.expected.values()) for case in cases)
    again = stand_in_cases(np.random.default_rng(2))
    assert [c.expected for c in cases] != [c.expected for c in again]


def test_estimate_problems_name_each_fault():
    expected = {"flops": 10.0, "bytes_accessed": None, "argument_bytes": 8, "output_bytes": 4, "temp_bytes": None}
    good = {**expected, "missing": {"bytes_accessed": "absent key", "temp_bytes": "no attribute"}}
    assert estimate_problems(good, expected) == []
    assert estimate_problems({**good, "flops": 10}, expected) == []  # an int equal to the estimate is fine
    assert estimate_problems({**good, "flops": 11.0}, expected)
    assert estimate_problems({**good, "bytes_accessed": 0.0}, expected)
    assert estimate_problems({**good, "missing": {"bytes_accessed": "absent key"}}, expected)
    assert estimate_problems({**good, "missing": {**good["missing"], "flops": "x"}}, expected)
    assert estimate_problems({**good, "missing": {"bytes_accessed": "", "temp_bytes": "x"}}, expected)
    assert estimate_problems({k: v for k, v in good.items() if k != "output_bytes"}, expected)
    assert estimate_problems({**good, "flops": True}, {**expected, "flops": 1.0})
    assert estimate_problems(None, expected)


def test_backend_estimates_normalize_every_return_shape():
    memory = SimpleNamespace(argument_size_in_bytes=1, output_size_in_bytes=2, temp_size_in_bytes=3)
    as_dict = backend_estimates(StandInCompiled({"flops": 5.0, "bytes accessed": 6.0}, memory))
    as_list = backend_estimates(StandInCompiled([{"flops": 5.0, "bytes accessed": 6.0}], memory))
    assert as_dict == as_list == {"flops": 5.0, "bytes_accessed": 6.0, "argument_bytes": 1.0,
                                  "output_bytes": 2.0, "temp_bytes": 3.0}
    failing = backend_estimates(StandInCompiled(RuntimeError("no"), None))
    assert failing == dict.fromkeys(ESTIMATE_FIELDS)


def test_this_backend_estimates_the_hand_count_for_fresh_products():
    rng = np.random.default_rng()
    for _ in range(5):
        m, k, n = fresh_matmul_shapes(rng)
        compiled = jax.jit(lambda a, b: a @ b).lower(*matmul_inputs(rng, m, k, n, specs=True)).compile()
        found = backend_estimates(compiled)
        assert found["flops"] == 2 * m * k * n
        assert found["argument_bytes"] == (m * k + k * n) * 4 and found["output_bytes"] == m * n * 4


def test_the_watch_sees_tracing_and_execution_apart():
    fn, watch = watched_matmul(count_runs=True)
    rng = np.random.default_rng()
    a, b = matmul_inputs(rng, 5, 4, 3)
    compiled = jax.jit(fn).trace(a, b).lower().compile()
    assert watch.traced_shapes == [[(5, 4), (4, 3)]] and watch.executions() == 0
    compiled(a, b)
    compiled(a, b)
    assert watch.executions() == 2 and len(watch.traced_shapes) == 1


def test_a_program_read_without_running_passes_and_running_it_is_caught():
    rng = np.random.default_rng()
    for reader, runs in ((read_program_right, 0), (read_program_that_runs, 1)):
        fn, watch = watched_matmul(count_runs=True)
        reader(fn, *matmul_inputs(rng, 6, 7, 8))
        assert watch.executions() == runs
    fn, watch = watched_matmul(count_runs=True)
    with pytest.raises(TypeError):  # running needs data; a ShapeDtypeStruct has none
        read_program_that_runs(fn, *matmul_inputs(rng, 6, 7, 8, specs=True))


def test_stage_problems_accept_the_right_stages_on_fresh_shapes():
    rng = np.random.default_rng()
    m, k, n = fresh_matmul_shapes(rng)
    fn, watch = watched_matmul()
    program = read_program_right(fn, *matmul_inputs(rng, m, k, n))
    assert stage_problems(program, m, k, n) == []
    assert watch.traced_shapes == [[(m, k), (k, n)]]
    assert flop_estimate_problems(program["estimates"], m, k, n, backend_estimates(program["compiled"])["flops"]) == []
    # The same stages through make_jaxpr and jit(...).lower, from ShapeDtypeStructs.
    specs = matmul_inputs(rng, m, k, n, specs=True)
    lowered = jax.jit(fn).lower(*specs)
    other = {**program, "jaxpr": jax.make_jaxpr(fn)(*specs), "lowered": lowered, "compiled": lowered.compile()}
    assert stage_problems(other, m, k, n) == []


def test_stage_problems_catch_wrong_shapes_and_wrong_objects():
    rng = np.random.default_rng()
    m, k, n = fresh_matmul_shapes(rng)
    fn, _ = watched_matmul()
    wrong = read_program_lesson_shapes(fn, *matmul_inputs(rng, m, k, n))
    assert stage_problems(wrong, m, k, n)
    right = read_program_right(fn, *matmul_inputs(rng, m, k, n))
    assert stage_problems({**right, "jaxpr": str(right["jaxpr"])}, m, k, n)
    assert stage_problems({**right, "lowered": right["stablehlo"]}, m, k, n)
    assert stage_problems({**right, "stablehlo": ""}, m, k, n)
    assert stage_problems({**right, "estimates": estimates_zero_when_missing(StandInCompiled(None, None))}, m, k, n)
    assert stage_problems({k_: v for k_, v in right.items() if k_ != "compiled"}, m, k, n)


def test_flop_estimate_problems_hold_the_estimate_against_the_hand_count():
    assert flop_estimate_problems({"flops": 210.0, "missing": {}}, 7, 5, 3, 210.0) == []
    assert flop_estimate_problems({"flops": 105.0, "missing": {}}, 7, 5, 3, 105.0)  # m*k*n
    assert flop_estimate_problems({"flops": None, "missing": {"flops": "none"}}, 7, 5, 3, None) == []
    assert flop_estimate_problems({"flops": 0.0, "missing": {}}, 7, 5, 3, None)  # an invented zero
    # XLA keeps the estimate in single precision: a big count arrives rounded, and that is no fault.
    rounded = float(np.float32(2 * 933 * 864 * 913))
    assert rounded != 2 * 933 * 864 * 913
    assert flop_estimate_problems({"flops": rounded, "missing": {}}, 933, 864, 913, rounded) == []


def test_shapes_read_every_kind_of_abstract_value():
    lowered = jax.jit(lambda a, b: a @ b).lower(jnp.ones((3, 4)), jax.ShapeDtypeStruct((4, 5), jnp.float32))
    assert shapes(lowered.in_avals) == shapes(lowered.args_info) == [(3, 4), (4, 5)]
    assert shapes(lowered.compile().out_info) == [(3, 5)]


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
        assert "perfcourse.checks.stages" in hidden
        for text_reader in ("as_text(", "str(_program", "repr(", "pretty_print"):
            assert text_reader not in hidden


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
        [report["hand_count"]["argument_bytes"], report["hand_count"]["output_bytes"]]]
