"""performance-04 (loops, unrolled or scanned): its checks without a kernel, and its artifact."""
import json
import time

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
from jax import lax

from conftest import ROOT

from perfcourse.checks import loops
from perfcourse.checks.loops import (COMPILE_SECONDS, DISPATCH_SECONDS, LOWER_SECONDS, WORK_SECONDS,
                                     close, count_equations, run_measure, top_level_equations)

LESSON = "performance-04"


# ----------------------------------------------------------------------------- the loops

def unrolled(h, xs, a):
    for t in range(xs.shape[0]):
        h = jnp.tanh(a * h + xs[t])
    return h


def scanned(h, xs, a):
    return lax.scan(lambda c, x: (jnp.tanh(a * c + x), None), h, xs)[0]


def fori(h, xs, a):
    return lax.fori_loop(0, xs.shape[0], lambda t, c: jnp.tanh(a * c + xs[t]), h)


def inputs(length, batch=2, width=3):
    rng = np.random.default_rng(length)
    return (jnp.asarray(rng.standard_normal((batch, width), dtype=np.float32)),
            jnp.asarray(rng.standard_normal((length, batch, width), dtype=np.float32)),
            jnp.asarray(rng.uniform(-0.9, 0.9, width).astype(np.float32)))


def equations(fn, length):
    return count_equations(jax.make_jaxpr(fn)(*inputs(length)))


# ------------------------------------------------------------------------ count_equations

def test_unrolled_count_grows_in_proportion_to_the_length():
    lengths = (2, 4, 8, 16)
    counts = [equations(unrolled, n) for n in lengths]
    per_step = (counts[1] - counts[0]) // (lengths[1] - lengths[0])
    assert per_step > 0
    assert all(c - counts[0] == per_step * (n - lengths[0]) for c, n in zip(counts, lengths)), counts


@pytest.mark.parametrize("fn", [scanned, fori])
def test_structured_loops_count_the_same_at_every_length(fn):
    assert len({equations(fn, n) for n in (2, 5, 64, 300)}) == 1
    assert equations(fn, 64) < equations(unrolled, 64)


def test_a_jit_wrapper_does_not_change_the_count():
    for fn in (unrolled, scanned, fori):
        args = inputs(6)
        assert count_equations(jax.make_jaxpr(jax.jit(fn))(*args)) == count_equations(jax.make_jaxpr(fn)(*args))


def test_nested_jaxprs_are_counted_by_their_contents():
    inner = jax.jit(lambda v: jnp.sin(v) * 2.0 + 1.0)  # three operations inside one jit equation
    x = jnp.ones(3)
    assert count_equations(jax.make_jaxpr(lambda v: inner(v))(x)) == 3
    assert top_level_equations(jax.make_jaxpr(lambda v: inner(v))(x)) == 1

    # cond: both branches are operations the compiler receives.
    def branches(p, v):
        return lax.cond(p, lambda u: jnp.sin(u), lambda u: jnp.cos(jnp.exp(u)), v)
    closed = jax.make_jaxpr(branches)(True, x)
    inside = count_equations(closed)
    assert inside >= 3 and inside > top_level_equations(closed)

    # while: its condition and its body are both counted.
    def loop(v):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, jnp.tanh(c[1])), (0, v))[1]
    closed = jax.make_jaxpr(loop)(x)
    assert count_equations(closed) >= 3 > top_level_equations(closed)


def test_open_and_closed_jaxprs_count_the_same():
    closed = jax.make_jaxpr(scanned)(*inputs(4))
    assert count_equations(closed) == count_equations(closed.jaxpr)


# -------------------------------------------------------------- run_measure: scripted timing

def solution(fn, *args, warm_calls=7):
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    run_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        run_seconds.append(time.perf_counter() - start)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}


from time import perf_counter_ns as imported_clock  # noqa: E402  (bound before the check patches time)
from jax import jit as imported_jit  # noqa: E402


def compile_only_traced_and_imported(fn, *args, warm_calls=7):
    """Counts through jit's trace, times XLA compilation without lowering, runs through the jitted function."""
    jitted = imported_jit(fn)
    traced = jitted.trace(*args)
    lowered = traced.lower()
    begin = imported_clock()
    lowered.compile()
    compile_seconds = (imported_clock() - begin) / 1e9

    def once():
        begin = imported_clock()
        np.asarray(jitted(*args))
        return (imported_clock() - begin) / 1e9
    return {"equations": count_equations(traced.jaxpr), "compile_seconds": compile_seconds,
            "run_seconds": [once() for _ in range(warm_calls)]}


def counted_through_jit(fn, *args, warm_calls=7):
    """make_jaxpr of the jitted function: the scripted jit must stay real while traced."""
    result = solution(fn, *args, warm_calls=warm_calls)
    return {**result, "equations": count_equations(jax.make_jaxpr(jax.jit(fn))(*args))}


def first_call_as_compile(fn, *args, warm_calls=7):
    jitted = jax.jit(fn)
    start = time.perf_counter()
    jax.block_until_ready(jitted(*args))
    compile_seconds = time.perf_counter() - start
    runs = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(jitted(*args))
        runs.append(time.perf_counter() - start)
    return {"equations": 0, "compile_seconds": compile_seconds, "run_seconds": runs}


def warmed_up_first(fn, *args, warm_calls=7):
    jax.block_until_ready(jax.jit(fn)(*args))
    return solution(fn, *args, warm_calls=warm_calls)


def unsynchronized(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    runs = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        compiled(*args)
        runs.append(time.perf_counter() - start)
    return {"equations": 0, "compile_seconds": compile_seconds, "run_seconds": runs}


def runs_include_compilation(fn, *args, warm_calls=7):
    """Times AOT compilation correctly... of a function it never calls: then times fresh first calls."""
    jitted = jax.jit(fn)
    runs = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(jitted(*args))
        runs.append(time.perf_counter() - start)
    return {"equations": 0, "compile_seconds": runs[0], "run_seconds": runs}


SYNCED_RUN = DISPATCH_SECONDS + WORK_SECONDS


@pytest.mark.parametrize("measure,compile_seconds", [
    (solution, LOWER_SECONDS + COMPILE_SECONDS),
    (compile_only_traced_and_imported, COMPILE_SECONDS),
    (counted_through_jit, LOWER_SECONDS + COMPILE_SECONDS),
])
def test_correct_measurements_pass_every_check(measure, compile_seconds):
    args = inputs(5)
    run = run_measure(measure, unrolled, args, 4)
    assert run.result["equations"] == equations(unrolled, 5)
    assert close(run.compile_seconds, compile_seconds) and run.compile_alone()
    assert run.compilations == 1 and run.calls >= 4 and len(run.run_seconds) == 4
    assert all(close(s, SYNCED_RUN) for s in run.run_seconds)
    assert not run.unsynchronized_measurements()


def test_the_first_call_timed_as_compilation_holds_a_run():
    run = run_measure(first_call_as_compile, unrolled, inputs(3), 3)
    assert close(run.compile_seconds, LOWER_SECONDS + COMPILE_SECONDS + SYNCED_RUN)
    assert not run.compile_alone()
    assert all(close(s, SYNCED_RUN) for s in run.run_seconds) and not run.unsynchronized_measurements()


def test_a_warm_up_before_compiling_measures_a_cache_hit():
    run = run_measure(warmed_up_first, unrolled, inputs(3), 3)
    assert close(run.compile_seconds, 0.0) and not run.compile_alone()
    assert run.compilations == 1  # the warm-up compiled; the timed compile found the cache
    assert all(close(s, SYNCED_RUN) for s in run.run_seconds)


def test_clearing_the_caches_after_a_warm_up_makes_the_compilation_count_again():
    def cleared(fn, *args, warm_calls=7):
        jax.block_until_ready(jax.jit(fn)(*args))
        jax.clear_caches()
        return solution(fn, *args, warm_calls=warm_calls)
    run = run_measure(cleared, unrolled, inputs(3), 3)
    assert run.compile_alone() and run.compilations == 2
    assert jax.clear_caches is not cleared and "clear_caches" not in cleared.__globals__


def test_unsynchronized_runs_are_caught_but_keep_compilation_apart():
    run = run_measure(unsynchronized, unrolled, inputs(3), 4)
    assert run.compile_alone() and all(s < COMPILE_SECONDS for s in run.run_seconds)
    assert run.unsynchronized_measurements() == [1, 2, 3, 4]
    assert all(close(s, DISPATCH_SECONDS) for s in run.run_seconds)


def test_a_run_time_holding_the_compilation_is_visible():
    run = run_measure(runs_include_compilation, unrolled, inputs(3), 4)
    assert not all(s < COMPILE_SECONDS for s in run.run_seconds)


def test_jit_and_clocks_are_restored_even_when_measure_raises():
    real_jit, real_clock, real_clear = jax.jit, time.perf_counter, jax.clear_caches

    def broken(fn, *args, warm_calls=7):
        assert jax.jit is not real_jit                   # patched while the check runs,
        assert globals()["imported_jit"] is not real_jit  # and so is the student's own binding
        raise RuntimeError("student bug")

    with pytest.raises(RuntimeError, match="student bug"):
        run_measure(broken, unrolled, inputs(2), 2)
    assert jax.jit is real_jit and time.perf_counter is real_clock and imported_jit is real_jit
    assert jax.clear_caches is real_clear
    assert globals()["imported_jit"] is real_jit
    assert time.perf_counter() != time.perf_counter()


def test_other_functions_are_jitted_for_real_during_the_check():
    def measure_other(fn, *args, warm_calls=7):
        other = jax.jit(lambda v: v + 1.0)
        assert not isinstance(other, loops.ScriptedJit)
        np.testing.assert_allclose(np.asarray(other(jnp.zeros(2))), [1.0, 1.0])
        return solution(fn, *args, warm_calls=warm_calls)
    assert run_measure(measure_other, unrolled, inputs(2), 2).compile_alone()


@pytest.mark.parametrize("returned,message", [
    ((1.0, [1.0]), "must return a dict"),
    ({"equations": 1, "compile_seconds": 1.0}, "missing"),
])
def test_a_result_of_the_wrong_form_is_named(returned, message):
    with pytest.raises(AssertionError, match=message):
        run_measure(lambda fn, *args, warm_calls=7: returned, unrolled, inputs(2), 2)


def test_attributes_not_scripted_come_from_real_jax():
    def peek(fn, *args, warm_calls=7):
        lowered = jax.jit(fn).lower(*args)
        assert "tanh" in lowered.as_text()  # the real lowering, built on demand
        return solution(fn, *args, warm_calls=warm_calls)
    assert run_measure(peek, unrolled, inputs(2), 2).compile_alone()


# --------------------------------------------------------------------------- the notebook

def source_cells():
    nb = nbformat.read(ROOT / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    return {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells if c.cell_type == "code"}


def test_grade_cells_and_points():
    points = {gid: c.metadata["nbgrader"].get("points") for gid, c in source_cells().items()
              if gid and c.metadata["nbgrader"].get("grade")}
    assert points == {"test_scanned_result": 3, "test_scanned_size": 2, "test_measure_equations": 1,
                      "test_measure_compile_apart": 2, "test_measure_run_synchronized": 2}


def test_hidden_tests_use_no_primitive_names_printed_text_or_time_thresholds():
    for gid, cell in source_cells().items():
        if not (gid or "").startswith("test_"):
            continue
        hidden = cell.source.split("### BEGIN HIDDEN TESTS", 1)[1]
        for banned in ("pjit", "str(jax.make_jaxpr", "perf_counter", ".primitive", "print("):
            assert banned not in hidden, (gid, banned)


def test_the_notebook_count_matches_the_course_count():
    namespace = {}
    exec(_count_cell(), namespace)
    for fn in (unrolled, scanned, fori):
        closed = jax.make_jaxpr(fn)(*inputs(7))
        assert namespace["count_equations"](closed) == count_equations(closed)


def _count_cell():
    nb = nbformat.read(ROOT / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "def count_equations" in c.source)
    return cell.source.split("\n\nfor length in")[0]


# --------------------------------------------------------------------------- the artifact

def committed():
    return json.loads((ROOT / "artifacts" / "cpu" / f"{LESSON}.json").read_text())


def test_report_shows_the_lesson_evidence():
    report = json.loads(committed()["stdout"])
    lengths = report["lengths"]
    assert lengths == sorted(lengths) and len(lengths) >= 4 and max(lengths) <= 128
    unrolled_counts = report["forms"]["unrolled"]["equations"]
    scanned_counts = report["forms"]["scanned"]["equations"]
    per_step = {count / length for count, length in zip(unrolled_counts, lengths)}
    assert len(per_step) == 1, "the unrolled count is proportional to the loop length"
    assert len(set(scanned_counts)) == 1 and scanned_counts[0] < unrolled_counts[0]
    for form in ("unrolled", "scanned"):
        for key in ("compile_seconds", "run_median_seconds"):
            values = report["forms"][form][key]
            assert len(values) == len(lengths) and all(v > 0 for v in values), (form, key)
    # The longest unrolled loop took longer to compile than the shortest: the lesson's point,
    # recorded once on one machine (a fact about this artifact, not a threshold for students).
    assert report["forms"]["unrolled"]["compile_seconds"][-1] > report["forms"]["unrolled"]["compile_seconds"][0]
    assert report["max_abs_difference_between_forms"] < 1e-5
    assert 0 <= report["max_abs_error_vs_numpy"] < 1e-5
    assert report["memory_measured"] is False and report["dtype"] == "float32"
    assert report["jax"] == committed()["environment"]["jax"]


def test_panels_and_diagram_draw_the_report():
    artifact = committed()
    report = json.loads(artifact["stdout"])
    panels = artifact["data"]["panels"]
    assert [p["title"] for p in panels] == ["Jaxpr equations", "Compile time (lower + compile)",
                                            f"Run time (median of {report['warm_calls']})"]
    for panel, key in zip(panels, ("equations", "compile_seconds", "run_median_seconds")):
        assert panel["kind"] == "line" and panel["x"] == report["lengths"]
        assert {s["label"]: s["y"] for s in panel["series"]} == {
            form: report["forms"][form][key] for form in ("unrolled", "scanned")}
    diagram = artifact["diagram"]
    assert diagram["panel"]["kind"] == "flow"
    assert len(diagram["panel"]["steps"]) == len(diagram["panel"]["notes"]) == 5
    assert all(diagram[k].strip() for k in ("title", "prediction", "reading", "alt", "scope"))
    alt = (ROOT / "artifacts" / "cpu" / f"{LESSON}.alt.txt").read_text()
    assert diagram["alt"] in alt and "Jaxpr equations" in alt
