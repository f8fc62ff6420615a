"""performance-04 (loops, unrolled or scanned): its checks without a kernel (probes run in-process),
and its artifact."""
import functools
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
from perfcourse.checks.loops import count_equations, top_level_equations

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


# ---------------------------------------------------------------- the jaxpr's plain structure

def test_the_structure_counts_like_the_jaxpr_and_refuses_other_shapes():
    from perfcourse.kernel.probes import loops as probe

    for fn in (unrolled, scanned, fori):
        closed = jax.make_jaxpr(fn)(*inputs(5))
        structure = probe.structure(closed)
        assert loops.count_structure(structure) == count_equations(closed)
        assert json.loads(json.dumps(structure)) == structure  # plain data: it crosses the channel as is
    for bad in ("12", [["tanh"]], [["tanh", "no"]], [[3, []]], [["scan", [[["x", 5]]]]]):
        with pytest.raises(AssertionError, match="structure"):
            loops.count_structure(bad)


# ---------------------------------------------------------------------- the scanned-loop checks

def wrong_carry(h, xs, a):
    return lax.scan(lambda c, x: (c, jnp.tanh(a * c + x)), h, xs)[1][-1]


def float64_result(h, xs, a):
    return np.asarray(scanned(h, xs, a), np.float64)


@pytest.mark.parametrize("fn", [scanned, fori, unrolled])
def test_right_loops_pass_the_result_check(fn):
    loops.check_scanned_result(fn)


@pytest.mark.parametrize("fn,message", [(wrong_carry, "loop length"), (float64_result, "JAX or NumPy array|dtype")])
def test_wrong_results_fail_the_result_check(fn, message):
    with pytest.raises(AssertionError, match=message):
        loops.check_scanned_result(fn)


def test_the_size_check_passes_structured_loops_and_fails_unrolled_ones():
    loops.check_scanned_size(scanned, lengths=(2, 9, 120))
    loops.check_scanned_size(jax.jit(fori), lengths=(2, 9, 120))
    with pytest.raises(AssertionError, match="holds no loop"):
        loops.check_scanned_size(unrolled, lengths=(2, 9))


def half_unrolled(h, xs, a):
    """A Python loop over the first half of the steps, a scan over the rest: a loop that grows."""
    middle = xs.shape[0] // 2
    return scanned(unrolled(h, xs[:middle], a), xs[middle:], a)


def partly_unrolled(h, xs, a):
    return lax.scan(lambda c, x: (jnp.tanh(a * c + x), None), h, xs, unroll=8)[0]


def printing(h, xs, a):
    def step(c, x):
        jax.debug.print("state {}", c[0, 0])
        return jnp.tanh(a * c + x), None
    return lax.scan(step, h, xs)[0]


@pytest.mark.slow
def test_the_size_is_read_from_the_program_exported_at_lengths_picked_here():
    from perfcourse.checks import programs

    rng = np.random.default_rng(0)
    drawn = {loops.size_lengths(rng) for _ in range(20)}
    assert len(drawn) > 10 and all(b - a >= 160 and a >= 20 for a, b in drawn)
    sizes = {n: loops.program_size(programs.exported(fn, programs.specs_of(*inputs(n)))) for fn in (scanned,)
             for n in (20, 64, 300)}
    assert len(set(sizes.values())) == 1  # constants left out, a scan's program is one size at every length
    with pytest.raises(AssertionError, match="grows with the loop length"):
        loops.check_scanned_size(half_unrolled)
    loops.check_scanned_size(partly_unrolled)      # unroll=8: a few steps more or less, never one per step
    loops.check_scanned_size(wrong_carry)          # the wrong result loses the result's points, not these
    for check in (loops.check_scanned_size, loops.check_scanned_result):
        check(printing)                            # exported without its debug print, which computes nothing


def forged_export(program):
    """A probe dispatcher that hands in `program`'s export for scanned's, whatever scanned is."""
    real = loops.remote.probe

    def probe(name, *args, **kwargs):
        if name == "programs.export":
            structs = [jax.ShapeDtypeStruct(tuple(shape), dtype) for shape, dtype in args[1]]
            return bytes(jax.export.export(jax.jit(program))(*structs).serialize())
        return real(name, *args, **kwargs)
    return probe


def test_a_forged_program_must_compute_what_scanned_does(monkeypatch):
    """A Python loop cannot borrow the size of a program that is not its own: a program of one while
    loop that does not compute the recurrence is refused; one that does is the work asked for."""
    def constant_size(h, xs, a):  # one while loop, the same at every length, no recurrence inside
        return lax.fori_loop(0, xs.shape[0], lambda t, c: jnp.tanh(a * c + xs[-1]) * 0 + c, h)
    monkeypatch.setattr(loops.remote, "probe", forged_export(constant_size))
    with pytest.raises(AssertionError, match="give different results on the same inputs"):
        loops.check_scanned_size(unrolled)
    with pytest.raises(AssertionError, match="jax.jit\\(scanned\\) on fresh inputs"):
        loops.check_scanned_result(unrolled)
    monkeypatch.setattr(loops.remote, "probe", forged_export(scanned))
    loops.check_scanned_size(unrolled)  # the forger wrote the scan: what the cell asks for


# ----------------------------------------------------------- measure, on the instrument and for real

def synchronized_runs(compiled, args, count):
    """`count` runs of `compiled`, each timed until its result is ready."""
    runs = []
    for _ in range(count):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        runs.append(time.perf_counter() - start)
    return runs


def solution(fn, *args, warm_calls=7, first_apart=True):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    run_seconds = synchronized_runs(compiled, args, warm_calls + first_apart)[first_apart:]
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}


def first_run_among_the_samples(fn, *args, warm_calls=7):
    """Times warm_calls runs of the compiled program, the first of them among the samples."""
    return solution(fn, *args, warm_calls=warm_calls, first_apart=False)


from time import perf_counter_ns as imported_clock  # noqa: E402
from jax import jit as imported_jit  # noqa: E402


def compile_only_traced_and_imported(fn, *args, warm_calls=7):
    """Counts through jit's trace, times XLA compilation without tracing and lowering (the lesson
    asks for all three in the span), runs through the jitted function."""
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


def monotonic_default_and_partial(fn, *args, warm_calls=7, clock=time.monotonic_ns):
    jit = functools.partial(jax.jit, inline=False)
    begin = clock()
    compiled = jit(fn).lower(*args).compile()
    compile_seconds = (clock() - begin) * 1e-9
    compiled(*args).block_until_ready()  # the first run, untimed
    runs = []
    for _ in range(warm_calls):
        begin = clock()
        compiled(*args).block_until_ready()
        runs.append((clock() - begin) * 1e-9)
    return {"equations": count_equations(jax.make_jaxpr(jax.jit(fn))(*args)), "compile_seconds": compile_seconds,
            "run_seconds": runs}


def first_call_as_compile(fn, *args, warm_calls=7):
    jitted = jax.jit(fn)
    start = time.perf_counter()
    jax.block_until_ready(jitted(*args))
    compile_seconds = time.perf_counter() - start
    return {**solution(fn, *args, warm_calls=warm_calls), "compile_seconds": compile_seconds}


def warmed_up_first(fn, *args, warm_calls=7):
    jax.block_until_ready(jax.jit(fn)(*args))
    return solution(fn, *args, warm_calls=warm_calls)


def top_level(fn, *args, warm_calls=7):
    return {**solution(fn, *args, warm_calls=warm_calls), "equations": len(jax.make_jaxpr(fn)(*args).eqns)}


def test_the_calibration_is_of_this_machine():
    calibration = loops.calibrate()
    assert loops.STEPS[0] <= calibration.steps <= loops.STEPS[1]
    assert 0 < calibration.compile_seconds < 30 and 0 < calibration.seconds_per_iteration < 1e-5
    assert calibration.iterations(1.0) > 1000


def traced_in_the_span_and_imported(fn, *args, warm_calls=7):
    """Times jit's stages one after another in one span, counts the trace it timed."""
    jitted = imported_jit(fn)
    begin = imported_clock()
    traced = jitted.trace(*args)
    traced.lower().compile()
    compile_seconds = (imported_clock() - begin) / 1e9

    def once():
        begin = imported_clock()
        np.asarray(jitted(*args))
        return (imported_clock() - begin) / 1e9
    return {"equations": count_equations(traced.jaxpr), "compile_seconds": compile_seconds,
            "run_seconds": [once() for _ in range(warm_calls + 1)][1:]}


# The equation check is cheap, so correct measurements pass it in make check; timing them is slow.
@pytest.mark.parametrize("measure", [solution, traced_in_the_span_and_imported, monotonic_default_and_partial])
def test_correct_measurements_pass_the_equation_check(measure):
    loops.check_measure_equations(measure)


@pytest.mark.slow
@pytest.mark.parametrize("measure", [solution, traced_in_the_span_and_imported, monotonic_default_and_partial])
def test_correct_measurements_pass_the_compile_apart_check(measure):
    loops.check_measure_compile_apart(measure, warm_calls=2)


def test_a_top_level_count_fails_the_equation_check_only():
    with pytest.raises(AssertionError, match="nested jit and scan"):
        loops.check_measure_equations(top_level)


@pytest.mark.slow
def test_the_first_call_timed_as_compilation_holds_a_run():
    with pytest.raises(AssertionError, match="holds a run"):
        loops.check_measure_compile_apart(first_call_as_compile, warm_calls=2)


def traced_first(fn, *args, warm_calls=7):
    """Counts first: make_jaxpr traces fn, and the timed .lower() reuses that trace."""
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    return {**solution(fn, *args, warm_calls=warm_calls), "equations": equations}


def compiled_after_the_clock(fn, *args, warm_calls=7):
    """Times trace and lowering only: .compile() comes after the second clock read."""
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    compile_seconds = time.perf_counter() - start
    runs = synchronized_runs(lowered.compile(), args, warm_calls + 1)[1:]
    return {"equations": count_equations(jax.make_jaxpr(fn)(*args)), "compile_seconds": compile_seconds,
            "run_seconds": runs}


@pytest.mark.parametrize("measure", [warmed_up_first, traced_first, compiled_after_the_clock,
                                     compile_only_traced_and_imported],
                         ids=lambda m: m.__name__)
@pytest.mark.slow
def test_a_compile_span_without_a_stage_fails(measure):
    with pytest.raises(AssertionError, match="shorter than tracing, lowering and compiling|never traced, lowered"):
        loops.check_measure_compile_apart(measure, warm_calls=2)


@pytest.mark.slow
def test_each_stage_is_held_and_timed_on_the_checking_side():
    run = loops.run_instrument(solution, 0.0, 2, staged=True)
    assert len(run.paths) == 1 and run.runs_after[0] is not None
    path, span = run.paths[0], run.result["compile_seconds"]
    assert path["compiled"] - path["trace"] >= sum(run.holds[:3])  # each stage lasted at least its hold
    assert path["compiled"] - path["trace"] - loops.CLOCK_SLACK <= span  # the span holds the path
    assert loops.compile_span_problems(run) == []
    assert all(h >= loops.HOLD_FACTOR[0] * max(loops.HOLD_LEAST, run.compile_work) for h in run.holds[:3])


def traced_first_then_first_call(fn, *args, warm_calls=7):
    """Two mistakes that partly cancel in length: the trace is left out, a run is put in."""
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    return {**first_call_as_compile(fn, *args, warm_calls=warm_calls), "equations": equations}


@pytest.mark.slow
def test_a_span_without_its_trace_but_with_a_run_is_still_told_apart():
    for _ in range(3):
        with pytest.raises(AssertionError, match="holds a run"):
            loops.check_measure_compile_apart(traced_first_then_first_call, warm_calls=2)


def test_the_instrument_is_a_plain_function_and_its_traces_are_counted_here():
    from perfcourse.kernel.probes import loops as probe

    program = loops.Program(5, 0.25)
    fn = probe.instrument(program)
    args = (jnp.ones((2, 3)), jnp.ones((4, 2, 3)), jnp.full(3, 0.5), jnp.int32(10))
    jax.make_jaxpr(fn)(*args)
    assert program.traces == 1 and type(fn).__name__ == "function"  # a plain function, counted here
    out = jax.jit(fn)(*args)
    assert out.shape == (2, 3) and out.dtype == jnp.float32 and program.traces in (1, 2)  # jit may reuse the trace


@pytest.mark.parametrize("returned,message", [
    ((1.0, [1.0]), "must return a dict"),
    ({"equations": 1, "compile_seconds": 1.0}, "missing"),
    ({"equations": 1, "compile_seconds": "fast", "run_seconds": [1.0]}, "number of seconds"),
    ({"equations": 1, "compile_seconds": 1.0, "run_seconds": [1.0]}, "returned 1 run times"),
])
def test_a_result_of_the_wrong_form_is_named(returned, message):
    with pytest.raises(AssertionError, match=message):
        loops.check_measure_compile_apart(lambda fn, *args, warm_calls=7: returned, warm_calls=2)


def _given_timer():
    """The lesson's locked course_timer cell (performance-01's time_completed), run here."""
    namespace = {"jax": jax}
    exec(source_cells()["course_timer"].source, namespace)
    return namespace["time_completed"]


def through_the_given_timer(fn, *args, warm_calls=7):
    """The source's measure: the compile span timed apart, the runs through the course's timer."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    _, run_seconds = _given_timer()(compiled, *args, warm_calls=warm_calls)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}


def timer_first_call_as_compile(fn, *args, warm_calls=7):
    compile_seconds, run_seconds = _given_timer()(jax.jit(fn), *args, warm_calls=warm_calls)
    return {"equations": count_equations(jax.make_jaxpr(fn)(*args)), "compile_seconds": compile_seconds,
            "run_seconds": run_seconds}


def timer_first_call_kept(fn, *args, warm_calls=7):
    """The compile span right, but the timer's first call put back among its warm samples."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    first, warm = _given_timer()(compiled, *args, warm_calls=warm_calls - 1)
    return {"equations": count_equations(jax.make_jaxpr(fn)(*args)), "compile_seconds": compile_seconds,
            "run_seconds": [first, *warm]}


def staged_run(run_seconds, unit=0.05):
    """What the compile check saw, with these run times: each warm run and each first run held as it holds them."""
    holds = (2 * unit, 2 * unit, 2 * unit, loops.RUN_HOLD_FACTOR * unit, loops.FIRST_RUN_HOLD_FACTOR * unit)
    return loops.MeasureRun({"equations": 1, "compile_seconds": 1.0, "run_seconds": run_seconds}, 1, 0.0, unit, holds)


def test_a_first_run_among_the_warm_samples_is_told_apart_by_its_hold():
    """The first run after a compilation is held longer than every warm run: a sample that holds it is
    longer than the middle of the two holds, a warm one (its hold, and its way here) shorter."""
    assert loops.FIRST_RUN_HOLD_FACTOR >= 2 * loops.RUN_HOLD_FACTOR
    warm, first = loops.RUN_HOLD_FACTOR * 0.05, loops.FIRST_RUN_HOLD_FACTOR * 0.05
    assert loops.first_run_problems(staged_run([warm + 0.02, warm + 0.09, warm])) == []
    assert loops.first_run_problems(staged_run([first + 0.001, warm + 0.01])) == [loops.FIRST_RUN_IN_SAMPLES]
    assert loops.first_run_problems(staged_run([warm, warm, first])) == [loops.FIRST_RUN_IN_SAMPLES]
    unheld = loops.MeasureRun({"run_seconds": [9.0]}, 1, 0.0, 0.05, (0.0,) * 5)  # the timing checks' runs
    assert loops.first_run_problems(unheld) == []


def test_the_first_run_after_each_compilation_is_held_longer():
    program = loops.Program(1, 0.5, (0.0, 0.0, 0.0, 0.001, 0.03))
    program.trace(), program.lowered(), program.compiled()
    program.ran(), program.ran()
    program.compiled()
    program.ran()
    runs = [ended - began for kind, began, ended in program._events if kind == "run"]
    assert runs[0] >= 0.03 and runs[1] < 0.03 and runs[2] >= 0.03, runs


@pytest.mark.slow
@pytest.mark.parametrize("measure", [first_run_among_the_samples, timer_first_call_kept], ids=lambda m: m.__name__)
def test_warm_samples_holding_the_first_run_fail(measure):
    with pytest.raises(AssertionError, match="first run"):
        loops.check_measure_compile_apart(measure, warm_calls=3)


def unwaited_runs(fn, *args, warm_calls=7):
    """The compile span right and the first run apart, but each warm run timed without waiting for it."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    jax.block_until_ready(compiled(*args))
    run_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        compiled(*args)
        run_seconds.append(time.perf_counter() - start)
    return {"equations": count_equations(jax.make_jaxpr(fn)(*args)), "compile_seconds": compile_seconds,
            "run_seconds": run_seconds}


def test_a_run_time_shorter_than_the_runs_work_did_not_wait():
    def run(*run_seconds):
        return loops.MeasureRun({"run_seconds": list(run_seconds)}, 1, 0.2, 0.05)

    # a waited sample passes even where the work ran four times faster than calibrated (a calibration under load)
    assert loops.unwaited_run_problems(run(0.05, 0.07, 0.2)) == []
    assert loops.unwaited_run_problems(run(0.06, 0.0001)) == [loops.UNWAITED_RUNS]
    assert loops.unwaited_run_problems(loops.MeasureRun({"run_seconds": [0.0]}, 1, 0.0, 0.05)) == []  # no work


@pytest.mark.slow
def test_warm_runs_timed_without_waiting_fail():
    """The staged instrument's runs wait for their host callback, so the check asks an unheld one too."""
    with pytest.raises(AssertionError, match="ready"):
        loops.check_measure_compile_apart(unwaited_runs, warm_calls=3)


@pytest.mark.slow
def test_runs_through_the_given_timer_keep_the_compile_points():
    """The timer's first call of the compiled program is a run, kept apart: the span holds none."""
    loops.check_measure_equations(through_the_given_timer)
    loops.check_measure_compile_apart(through_the_given_timer, warm_calls=2)
    with pytest.raises(AssertionError, match="holds a run"):
        loops.check_measure_compile_apart(timer_first_call_as_compile, warm_calls=2)


# ------------------------------------------------------------------------------ reading the sweep

VERDICTS = {(True, True): "both grow", (False, False): "neither grows", (False, True): "only compile time grows",
            (True, False): "only the equations grow"}


def growth_polyfit(lengths, equations, compile_seconds):
    x = np.asarray(lengths, float)
    lines = [np.polyfit(x, np.asarray(v, float), 1) for v in (equations, compile_seconds)]
    ends = [(b + a * x.min(), b + a * x.max()) for a, b in lines]
    return {"equations_per_step": lines[0][0], "seconds_per_step": lines[1][0], "shortest_seconds": ends[1][0],
            "longest_seconds": ends[1][1], "verdict": VERDICTS[tuple(bool(e >= 2 * s) for s, e in ends)]}


def growth_linear_regression(lengths, equations, compile_seconds):
    import statistics

    fits = [statistics.linear_regression(lengths, v) for v in (equations, compile_seconds)]
    ends = [(f.intercept + f.slope * min(lengths), f.intercept + f.slope * max(lengths)) for f in fits]
    return {"equations_per_step": fits[0].slope, "seconds_per_step": fits[1].slope, "shortest_seconds": ends[1][0],
            "longest_seconds": ends[1][1], "verdict": VERDICTS[tuple(e >= 2 * s for s, e in ends)]}


def growth_two_ends(lengths, equations, compile_seconds):
    (l0, e0, c0), (l1, e1, c1) = sorted(zip(lengths, equations, compile_seconds))[::len(lengths) - 1]
    return {"equations_per_step": (e1 - e0) / (l1 - l0), "seconds_per_step": (c1 - c0) / (l1 - l0),
            "shortest_seconds": c0, "longest_seconds": c1, "verdict": VERDICTS[e1 >= 2 * e0, c1 >= 2 * c0]}


def growth_slope_sign(lengths, equations, compile_seconds):
    right = growth_polyfit(lengths, equations, compile_seconds)
    return {**right, "verdict": VERDICTS[right["equations_per_step"] > 0.5, right["seconds_per_step"] > 0]}


def growth_sorted_order(lengths, equations, compile_seconds):
    a, b = np.polyfit(lengths, compile_seconds, 1)
    return {**growth_polyfit(lengths, equations, compile_seconds), "shortest_seconds": b + a * lengths[0],
            "longest_seconds": b + a * lengths[-1]}


def growth_verdict_from_end_samples(lengths, equations, compile_seconds):
    right = growth_polyfit(lengths, equations, compile_seconds)
    (_, e0, c0), (_, e1, c1) = sorted(zip(lengths, equations, compile_seconds))[::len(lengths) - 1]
    return {**right, "verdict": VERDICTS[e1 >= 2 * e0, c1 >= 2 * c0]}


def growth_ratio_of_means(lengths, equations, compile_seconds):
    right = growth_polyfit(lengths, equations, compile_seconds)
    return {**right, "verdict": "both grow" if right["equations_per_step"] > 0.5 else "neither grows"}


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("reading", [growth_polyfit, growth_linear_regression], ids=lambda f: f.__name__)
def test_least_squares_readings_pass_the_growth_check(reading, seed):
    loops.check_loop_growth(reading, np.random.default_rng(seed))


@pytest.mark.parametrize("reading,message", [
    (growth_two_ends, "seconds_per_step is not right"),
    (growth_slope_sign, "verdict is 'only compile time grows', not 'neither grows'"),
    (growth_sorted_order, "shortest_seconds is not right"),
    (growth_ratio_of_means, "verdict is"),
    (growth_verdict_from_end_samples, "verdict is 'only the equations grow', not 'both grow'"),
    (lambda *args: "both grow", "should return a dict"),
    (lambda *args: 1 / 0, "raised ZeroDivisionError"),
    (lambda *args: {"verdict": "both grow"}, "has no 'equations_per_step'"),
], ids=["two-ends", "slope-sign", "sorted-order", "one-verdict", "end-samples-verdict", "not-a-dict", "raises",
        "keys-missing"])
def test_wrong_readings_fail_the_growth_check(reading, message):
    for seed in range(20):
        with pytest.raises(AssertionError, match=message):
            loops.check_loop_growth(reading, np.random.default_rng(seed))


def test_the_drawn_sweeps_hold_each_verdict_clearly_and_in_every_order():
    for seed in range(100):
        cases = loops.growth_cases(np.random.default_rng(seed))
        assert [loops.expected_growth(*case[1:])["verdict"] for case in cases] == [
            "both grow", "neither grows", "only compile time grows", "only the equations grow", "both grow"]
        # the last: its two end samples alone say the compile time does not grow
        lengths, seconds = cases[-1][1], cases[-1][3]
        assert seconds[lengths.index(max(lengths))] < 2 * seconds[lengths.index(min(lengths))]
        for what, lengths, equations, seconds in cases:
            assert len(lengths) == len(equations) == len(seconds) >= 3 and max(lengths) >= 4 * min(lengths)
            expected = loops.expected_growth(lengths, equations, seconds)
            ratio = expected["longest_seconds"] / expected["shortest_seconds"]
            assert expected["shortest_seconds"] > 0 and expected["seconds_per_step"] > 0
            assert ratio >= loops.GROWS or ratio <= loops.FLAT, (what, ratio)
            assert all(isinstance(v, float) for v in seconds) and all(isinstance(v, int) for v in equations)
        assert cases[0][1] == sorted(cases[0][1]) and cases[1][1] == sorted(cases[1][1], reverse=True)
        for _, lengths, _, _ in cases[2:]:
            assert lengths[0] != min(lengths) or lengths[-1] != max(lengths)


def test_the_reference_lines_are_numpys_least_squares():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(1, 500, 9), rng.uniform(0.01, 2.0, 9)
    assert np.allclose(loops.least_squares(x, y), np.polyfit(x, y, 1), rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- the notebook

def source_cells():
    nb = nbformat.read(ROOT / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    return {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells if c.cell_type == "code"}


def test_grade_cells_and_points():
    points = {gid: c.metadata["nbgrader"].get("points") for gid, c in source_cells().items()
              if gid and c.metadata["nbgrader"].get("grade")}
    assert points == {"test_scanned_result": 3, "test_scanned_size": 2, "test_measure_equations": 1,
                      "test_measure_compile_apart": 2, "test_loop_growth": 2}


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


def test_the_report_compares_run_times_by_the_middle_halves():
    """performance-04's run_comparison is performance-01's rule (checks.halves) on each length's two
    sets of run times, and the cell's own helper agrees with it on touching and stalled sets too."""
    import nbformat

    from perfcourse.checks import halves

    report = json.loads(committed()["stdout"])
    forms, words = report["forms"], {halves.FASTER: "unrolled faster", halves.SLOWER: "scanned faster",
                                      halves.WITHIN: "within the spread"}
    assert report["run_comparison"] == {
        str(length): words[halves.compare(forms["unrolled"]["run_seconds"][i], forms["scanned"]["run_seconds"][i])]
        for i, length in enumerate(report["lengths"])}
    source = {c.get("id"): c.source for c in nbformat.read(ROOT / "source" / LESSON / f"{LESSON}.ipynb", 4).cells}
    cell = source["cell-18"]
    start = cell.index("def faster_form(")
    namespace = {"np": np}
    exec(cell[start:cell.index("\n\n\n", start)], namespace)
    rng = np.random.default_rng(0)
    pairs = [halves.touching(rng) for _ in range(20)] + [
        ([1.0, 1.1, 1.05, 1.02, 9.0], [1.3, 1.25, 1.35, 1.28, 1.32]), ([1.0, 1.2, 1.1], [1.15, 1.3, 1.25])]
    for a, b in pairs:
        assert namespace["faster_form"](a, b) == words[halves.compare(a, b)]


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
    # Each form's reading (the source's loop_growth) is the checks' own reading of the same sweep.
    for form, reading in report["growth"].items():
        expected = loops.expected_growth(lengths, report["forms"][form]["equations"],
                                         report["forms"][form]["compile_seconds"])
        assert loops.growth_problems(reading, lengths, report["forms"][form]["equations"],
                                     report["forms"][form]["compile_seconds"], form) == [], form
        assert reading["verdict"] == expected["verdict"] in loops.GROWTH_VERDICTS.values()
    assert set(report["growth"]) == {"unrolled", "scanned"} and report["growth"]["unrolled"]["verdict"] == "both grow"
    assert report["max_abs_difference_between_forms"] < 1e-5
    assert 0 <= report["max_abs_error_vs_numpy"] < 1e-5
    # The backend's own tanh, measured beside the recurrence's error: float32's last digits on a CPU.
    assert 0 < report["tanh_error_vs_numpy"] < 1e-6
    assert report["memory_measured"] is False and report["dtype"] == "float32"
    assert report["jax"] == committed()["environment"]["jax"]


def test_panels_and_diagram_draw_the_report():
    artifact = committed()
    report = json.loads(artifact["stdout"])
    panels = artifact["data"]["panels"]
    assert [p["title"] for p in panels] == ["Jaxpr equations", "Compile time (trace, lower, compile)",
                                            f"Run time (median of {report['warm_calls']})"]
    # Growth in proportion to the loop length shows as a straight line: both axes linear.
    assert all(p.get("yscale", "linear") == p.get("xscale", "linear") == "linear" for p in panels[:2])
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


def test_the_text_expects_the_error_the_tpu_recorded():
    """Issue 50: the text expected 1e-6 to 1e-5 on a TPU, whose artifact recorded 4.5e-5. It now reads
    the backend's tanh precision beside the error and gives the chip's measured range."""
    tpu = json.loads(json.loads((ROOT / "artifacts" / "tpu" / f"{LESSON}.json").read_text())["stdout"])
    assert 1e-5 <= tpu["max_abs_error_vs_numpy"] < 1e-4
    text = " ".join({c.get("id"): c.source for c in nbformat.read(
        ROOT / "source" / LESSON / f"{LESSON}.ipynb", 4).cells}["cell-17"].split())
    assert "expect `1e-6` to `1e-5`" not in text
    for claim in ("`tanh_error_vs_numpy`", "up to `2.4e-5` in units of `1 + |exact|`", "by `4.5e-5` in this sweep",
                  "up to about `1e-4`"):
        assert claim in text, claim


# --------------------------------------------------------------- the recount: measure run apart (issue 51)

def recount_request(case, seed=7, folder="samples"):
    """What the grader hands the recount for a sample of this lesson (grading/recount.py)."""
    from perfcourse import samples
    from perfcourse.grading import recount

    sample = next(s for s in samples.discover(ROOT, [LESSON], folder=folder) if s.case == case)
    source = nbformat.read(ROOT / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    return recount.request_of(samples.build(ROOT, sample), source, seed)


def test_the_recount_is_handed_the_lessons_cells_and_the_submissions():
    request = recount_request("solution")
    assert any("def count_equations" in s for s in request["lesson"])
    assert any("def time_completed" in s for s in request["lesson"])
    assert not any("def measure" in s or "BEGIN HIDDEN" in s or "def scanned" in s for s in request["lesson"])
    assert request["cells"][request["target"]].startswith("def measure")
    assert not any("BEGIN HIDDEN" in s for s in request["cells"])


MEASURE_CELL = "def measure(fn, *args, warm_calls=7):\n    return {'equations': count(fn, *args)}\n"


@pytest.mark.parametrize("other,chosen,unseen", [
    ("import math\ndef count(fn, *args):\n    return depth(jax.make_jaxpr(fn)(*args))\ndef depth(j):\n    return 1\n"
     "print('ready')\nunused = 3\n", 2, []),                           # a def and what it uses; no print
    ("count = lambda fn, *args: 1\n", 0, ["count"]),                         # bound by an assignment
    ("def count(fn, *args):\n    return 1\ncount.calls = 0\n", 1, ["count"]),  # changed at the top level
    ("def count_equations(j):\n    return 6\ndef count(fn, *args):\n    return count_equations(fn)\n", 1, []),
    ("def count(fn, *args):\n    raise NotImplementedError\n%time x = 1\n", 1, []),  # a magic; a builtin
    ("from math import *\ndef count(fn, *args):\n    return floor(1.5)\n", 2, ["floor"]),  # a star import, along
    ("import my_helpers\ndef count(fn, *args):\n    return my_helpers.count(fn)\n", 2, ["module my_helpers"]),
    ("def count(fn, *args):\n    return len(In)\n", 1, ["In"]),           # bound by no cell (IPython's)
    ("def count(:\n", 0, ["count"]),                                    # a cell that does not parse binds nothing
])
def test_the_recount_takes_only_the_definitions_measure_needs(other, chosen, unseen):
    from perfcourse.kernel import recount

    lesson = ["import jax\ndef count_equations(j):\n    return 0\n"]
    statements, found = recount.selection(lesson, [recount.python_of(other), MEASURE_CELL], 1)
    assert len(statements) == chosen and sorted(found) == unseen, found
    assert not any("def count_equations" in s for s in statements)  # the lesson's helper is the lesson's


def test_the_recount_takes_a_helper_whose_name_a_function_also_binds_for_itself():
    from perfcourse.kernel import recount

    cell = MEASURE_CELL + "def spare(fn):\n    count = 3\n    return count\n"
    assert recount.selection([], ["def count(fn, *args):\n    return 1\ncount = count\n", cell], 1) == (
        ["def count(fn, *args):\n    return 1"], {"count": "another cell binds or changes it at its top level"})
    local_only = "def measure(fn, *args, warm_calls=7):\n    start = 1\n    return {'equations': start}\n"
    assert recount.selection([], ["start = 0\ndef start():\n    pass\n", local_only], 1)[1] == {}
    own_file = "def measure(fn, *args, warm_calls=7):\n    import my_helpers\n    return my_helpers.count(fn)\n"
    assert list(recount.selection([], ["import time\n", own_file], 1)[1]) == ["module my_helpers"]


def test_a_cell_too_large_for_the_recount_is_not_handed_over_and_leaves_its_names_unknown():
    from perfcourse.grading import recount as grader
    from perfcourse.kernel import recount

    def cell(source, grade_id=None, grade=False):
        meta = {"nbgrader": {"grade_id": grade_id, "grade": grade, "solution": not grade}} if grade_id else {}
        return nbformat.v4.new_code_cell(source, metadata=meta)

    nb = nbformat.v4.new_notebook(cells=[cell("x = 1\n" * grader.CELL_CHARS), cell(MEASURE_CELL, "measure"),
                                         cell("", grader.CHECK_CELL, grade=True)])
    request = grader.request_of(nb, None, 3)
    assert request["cells"][0] is None and request["cells"][request["target"]].startswith("def measure")
    assert recount.selection([], [None, MEASURE_CELL], 1)[1] == {
        recount.UNPARSED: "what it binds is unknown", "count": "no cell binds it where the recount can see"}


def test_an_honest_measure_run_apart_counts_what_the_checks_count():
    """Its helper and its clock come from another cell (the slow test below runs every sample)."""
    from perfcourse.kernel import recount

    request = recount_request("helpers-in-another-cell", seed=11)
    result = recount.verify(request)
    assert result["counts"] == loops.recounted_equations(11) and "error" not in result
    assert loops.recount_problem({"seed": 11, "counts": result["counts"]}) is None


def test_the_seeded_functions_vary_and_nest():
    counts = [loops.recounted_equations(seed) for seed in range(4)]
    assert len({c for pair in counts for c in pair}) >= 5
    from perfcourse.kernel import recount

    for fn, args in recount.seeded_functions(3):
        closed = jax.make_jaxpr(fn)(*args)
        assert count_equations(closed) > top_level_equations(closed)  # a top-level count is wrong


def forged_run_measure(real):
    """alias-forger's replaced probe: asked to run measure, it counts the course's function itself."""
    from perfcourse.kernel.probes import loops as probe

    def forged(name, *args, **kwargs):
        if name == "loops.run_measure" and args[1] in ("nested", "unrolled"):
            return {"equations": count_equations(jax.make_jaxpr(probe.build(args[1]))(*args[2])),
                    "compile_seconds": 0.01, "run_seconds": [0.001] * args[3]}
        return real(name, *args, **kwargs)
    return forged


def test_a_forged_probe_earns_the_probes_count_but_not_the_recount(monkeypatch):
    from perfcourse.kernel import recount

    counts_nothing = lambda fn, *args, warm_calls=7: {"equations": 6}  # noqa: E731 (alias-forger's measure)
    monkeypatch.setattr(loops.remote, "probe", forged_run_measure(loops.remote.probe))
    loops.check_measure_equations(counts_nothing)  # the probe's word alone passes it
    result = recount.verify(recount_request("alias-forger", seed=5, folder="adversarial"))
    assert result["counts"] == [6, 6] and result["unseen"] == {}
    assert "counted [6, 6] equations" in loops.recount_problem({"seed": 5, **result})


def test_the_recount_of_a_top_level_count_fails():
    from perfcourse.kernel import recount

    result = recount.verify(recount_request("top-level-count", seed=4))
    assert "counted" in loops.recount_problem({"seed": 4, **result})


def test_what_the_grader_writes_for_each_end_of_the_recount():
    """Whose failure it was is read from the private pipe (written before any student code ran),
    never from what the process printed: a forged error, a cut log, an exit or a stall after a
    clean start is the student's."""
    from perfcourse.grading.recount import outcome_of
    from perfcourse.kernel.recount import RESULT_MARK, STARTED_MARK, private_marks

    clean, lacking = private_marks({"unseen": {}}, None), private_marks({"unseen": {"count": "bound"}}, None)

    def said(reply):
        return f"{STARTED_MARK}\nT =  1: 5 equations\n{RESULT_MARK}{json.dumps(reply)}\n"

    assert outcome_of(clean, said({"counts": [3, 4]}), 0, 9) == {"seed": 9, "counts": [3, 4]}
    assert outcome_of(clean, said({"counts": [3]}), 0, 9)["error"]
    assert outcome_of(clean, said({"error": "measure raised X", "stage": "measure"}), 0, 9) == {
        "seed": 9, "error": "measure raised X"}
    forged = said({"error": "ImportError", "stage": "cells", "unseen": ["count"]})  # the old fallback's words
    assert outcome_of(clean, forged, 0, 9) == {"seed": 9, "error": "ImportError"}
    stalled, starved = ("it did not finish within 3 s", True), ("the worker's load starved it", False)
    for text, status in ((STARTED_MARK + "\n", -9), ("", 0), ("", None)):   # ended, its log cut, stalled
        outcome = outcome_of(clean, text, status, 9, stalled)
        assert outcome["error"] == outcome["flag"] and "fallback" not in outcome, outcome
    assert "did not finish within 3 s" in outcome_of(clean, "", None, 9, stalled)["error"]
    # Not theirs, yet not the probe's word either (a cell can lower its own priority and look starved): no verdict.
    assert outcome_of(clean, "", None, 9, starved) == {"undecided": starved[0]}
    assert outcome_of(clean, said({"counts": [3, 4]}), None, 9, starved) == {"seed": 9, "counts": [3, 4]}
    assert "count (bound)" in outcome_of(lacking, forged, 0, 9)["fallback"]  # it lacked a name apart: not theirs
    assert outcome_of(lacking, said({"counts": [3, 4]}), 0, 9) == {"seed": 9, "counts": [3, 4]}
    assert "error" in outcome_of(private_marks({"error": "the measure cell could not be parsed"}, None), "", 1, 9)
    assert "lesson's cells failed" in outcome_of(private_marks({"unseen": {}}, "NameError"), forged, 0, 9)["fallback"]
    assert "did not start" in outcome_of("", forged, 2, 9)["fallback"]             # the launcher refused
    assert "not ready" in outcome_of(STARTED_MARK + "\n", forged, None, 9)["fallback"]  # stopped before the cells
    assert loops.recount_problem({"fallback": "it did not finish"}) is None  # the probe's word stands, flagged
    assert loops.recount_problem(None) is None
    assert "did not count" in loops.recount_problem({"seed": 9, "error": "measure raised X"})


# Entries whose measure cell, run apart, ends or stalls the process, or makes an IPython shell (the
# magic's): run in the grader's own process only (the tests below).
IN_A_PROCESS_ONLY = ("recount-staller", "recount-error-forger", "recount-magic")


@pytest.mark.slow
def test_the_recount_agrees_with_every_entry_of_this_lesson():
    """Each sample and hostile entry, run apart as the grader runs it: an honest measure counts the
    seed's functions right, a wrong or missing one is named, recount-dodger falls back (flagged)."""
    import contextlib
    import io

    from perfcourse import samples
    from perfcourse.grading.recount import outcome_of
    from perfcourse.kernel import recount

    for folder in ("samples", "adversarial"):
        for sample in samples.discover(ROOT, [LESSON], folder=folder):
            if sample.case in IN_A_PROCESS_ONLY:
                continue
            request = recount_request(sample.case, seed=21, folder=folder)
            with contextlib.redirect_stdout(io.StringIO()):  # the lesson's cells print
                reply = recount.verify(request)
            private = recount.private_marks({"unseen": reply.get("unseen", {})}, None)
            outcome = outcome_of(private, f"{recount.RESULT_MARK}{json.dumps(reply)}\n", 0, 21)
            if sample.case == "recount-dodger":
                assert "fallback" in outcome
                continue
            problem = loops.recount_problem(outcome)
            assert (problem is None) == (sample.expected["test_measure_equations"] > 0), (sample.case, outcome)
            if sample.case.startswith("recount-") and folder == "samples":  # honest cells once lost apart: counted
                assert "counts" in outcome, (sample.case, outcome)


def test_the_check_reads_the_recount_the_grader_writes_beside_the_channel(tmp_path, monkeypatch):
    """The grader writes beside the notebook's channel folder; the check finds it from the channel's socket."""
    from types import SimpleNamespace

    from perfcourse.grading import recount, trusted_kernel

    channel = tmp_path / "abcdefgh"
    channel.mkdir()
    monkeypatch.setattr(loops.remote, "_channel", SimpleNamespace(path=str(channel / trusted_kernel.SOCKET)))
    monkeypatch.setattr(loops, "RECOUNT_WAIT", 0.2)
    writer = recount.Recount(None, recount.result_path(channel), None)
    writer._write({"seed": 3, "counts": [1, 2]})
    with pytest.raises(AssertionError, match=r"counted \[1, 2\] equations"):
        loops.check_recount()
    writer._write({"seed": 3, "counts": loops.recounted_equations(3)})
    loops.check_recount()
    writer._write({"fallback": "it did not finish"})
    loops.check_recount()  # the probe's word stands; the grader flags it
    assert writer.finish() == [recount.FLAG.format("it did not finish")] and not recount.result_path(channel).exists()
    loops.check_recount()  # none written (the grader flags that too): nothing to judge


def run_recounts(tmp_path, notebooks, cell_limit=60):
    """grading/recount.py end to end, unsandboxed (the launcher's "none" mode), one recount per
    notebook at once, each in a grading folder of its own; the finished runs."""
    from types import SimpleNamespace

    from perfcourse.grading import recount
    from perfcourse.grading.kernel_pair import KernelPair

    source = nbformat.read(ROOT / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    runs = []
    for number, nb in enumerate(notebooks):
        execute = SimpleNamespace(kernel_name="jax-cpu", xla_flags=None, sandbox="none", timeout=cell_limit,
                                  memory_bytes=None, pids=None, disk_bytes=None, cpu_seconds=None, file_bytes=None,
                                  _base=tmp_path / f"grading-{number}")
        execute._sandbox_limits = lambda execute=execute: KernelPair._sandbox_limits(execute)  # as the kernels get
        channel = tmp_path / f"channel-{number}"
        channel.mkdir()
        execute._base.mkdir()
        runs.append(recount.start(execute, nb or source, source, channel))
    for run in runs:
        run.thread.join()
    return runs


@pytest.mark.slow
def test_the_grader_runs_the_recount_in_a_process_of_its_own(tmp_path):
    """A correct measure cell with a magic (run by a shell of the recount's own) counts the seed's
    functions as the checks do; a measure cell that, run apart, prints a forged error line and exits
    loses the point (its private pipe said it started cleanly and lacked nothing); nothing of
    either run is left behind."""
    from perfcourse import samples

    magic, forger = (next(s for s in samples.discover(ROOT, [LESSON], folder=folder) if s.case == case)
                     for folder, case in (("samples", "recount-magic"), ("adversarial", "recount-error-forger")))
    solution, forged = run_recounts(tmp_path, [samples.build(ROOT, magic), samples.build(ROOT, forger)])
    assert set(solution.written) == {"seed", "counts"}, solution.written
    assert solution.written["counts"] == loops.recounted_equations(solution.written["seed"])
    assert forged.written == {"seed": forged.written["seed"], "error": forged.written["error"]}, forged.written
    assert "ModuleNotFoundError" in forged.written["error"] and loops.recount_problem(forged.written)
    for run in (solution, forged):
        assert run.runtime.parent == run.folder and run.finish() == [] and list(run.folder.iterdir()) == []


@pytest.mark.nightly
def test_a_measure_cell_that_stalls_apart_loses_the_point_flagged(tmp_path):
    """recount-staller, run apart, sleeps: killed at the limit (half the cell's), the student's failure."""
    from perfcourse import samples
    from perfcourse.grading import recount

    staller = next(s for s in samples.discover(ROOT, [LESSON], folder="adversarial") if s.case == "recount-staller")
    run, = run_recounts(tmp_path, [samples.build(ROOT, staller)], cell_limit=30)
    assert "did not finish within 15 s" in run.written["error"] and loops.recount_problem(run.written)
    assert run.finish() == [recount.FAILED_FLAG.format(run.written["flag"])]


@pytest.mark.nightly
def test_a_correct_measure_cell_starved_of_cpu_by_load_is_undecided_flagged(tmp_path, monkeypatch):
    """The recount of a correct measure cell, starved once the lesson's cells ran (each of its threads
    pinned to one CPU at the idle priority, beside a spinner of normal priority there): it passes
    the wall limit having used little CPU and waited most of it, so it is the worker's load, not the
    student's stall: the probe's count stands, flagged "could not be checked apart"."""
    import contextlib
    import os
    import subprocess
    import sys
    import threading
    import time

    from perfcourse import samples
    from perfcourse.grading import cpu_watch, recount
    from perfcourse.kernel.recount import LESSON_RAN

    cpu, load = sorted(os.sched_getaffinity(0))[-1], []

    def starve_once_the_lesson_ran(run):
        while run.process is None or LESSON_RAN not in recount._read(run.folder / recount.PRIVATE, 1 << 14, False):
            if run.written is not None:  # it ended first: the assertions below say how
                return
            time.sleep(0.02)
        load.append(subprocess.Popen([sys.executable, "-S", "-c",
                                      f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass"]))
        for _ in range(20):  # a second of it: threads started later are caught too
            for pid in cpu_watch.tree([run.process.pid]):
                for tid in cpu_watch.threads(pid):
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(tid, {cpu})
                        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
                # Its session's autogroup too, where Linux keeps one: the spinner's session would share the CPU fairly.
                with contextlib.suppress(OSError), open(f"/proc/{pid}/autogroup", "w") as group:
                    group.write("19")
            time.sleep(0.05)

    def start_and_starve(*args, start=recount.start):
        run = start(*args)
        threading.Thread(target=starve_once_the_lesson_ran, args=(run,), daemon=True).start()
        return run

    monkeypatch.setattr(recount, "start", start_and_starve)
    nb = samples.build(ROOT, next(s for s in samples.discover(ROOT, [LESSON]) if s.case == "solution"))
    cell = next(cell for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("grade_id") == recount.CELL)
    cell.source = "_work = sum(i * i for i in range(10 ** 7))  # a second of CPU: load comes in it\n" + cell.source
    try:
        run, = run_recounts(tmp_path, [nb], cell_limit=20)
    finally:
        for process in load:
            process.kill()
            process.wait()
    assert "the worker's load starved it of CPU" in run.written.get("undecided", ""), run.written
    assert run.finish() == [recount.UNDECIDED_FLAG.format(run.written["undecided"])]


def test_every_growth_run_holds_a_flat_sweep_whose_extremes_are_twice_apart():
    """A verdict read from the samples' extremes (slowest at least twice the fastest) says a flat sweep
    with one slow compile grows: every run's sweeps now separate it (it passed 287 of 300 runs with the
    slow compile at 1.4-1.8x; adversarial/performance-04/extremes-decide-the-verdict.py)."""
    def extremes(lengths, equations, compile_seconds):
        read = loops.expected_growth(lengths, equations, compile_seconds)
        grows = [max(v) >= 2 * min(v) for v in (equations, compile_seconds)]
        return {**read, "verdict": loops.GROWTH_VERDICTS[grows[0], grows[1]]}
    for seed in range(20):
        assert loops.loop_growth_problems(extremes, np.random.default_rng(seed)), seed


def test_a_recount_nobody_can_judge_is_machine_busy_never_the_probes_word(monkeypatch):
    """A run stalled where the grader cannot tell whose stall it was scores nothing and says so (the grade
    report names MachineBusy); it never lets the probe's count stand, as a fallback would."""
    from perfcourse.checks import MachineBusy

    monkeypatch.setattr(loops, "_recount_result", lambda: {"undecided": "the worker's load starved it of CPU"})
    with pytest.raises(MachineBusy, match="could not be judged: the worker's load starved it"):
        loops.check_recount()
    monkeypatch.setattr(loops, "_recount_result", lambda: {"fallback": "it did not start"})
    loops.check_recount()  # the probe's word, flagged by the grader
