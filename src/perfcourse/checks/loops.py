"""Grade loops and their measurement (lesson performance-04) from outside the student's process.

Counting. `count_equations(jaxpr)` counts the operations of a jaxpr wherever they are nested: an
equation that only holds other jaxprs (a nested jit, scan, while, cond) counts as the operations
inside it, not as one more, so `make_jaxpr(f)` and `make_jaxpr(jax.jit(f))` count the same, and
the count depends on no primitive name. It walks the plain structure that
`perfcourse.kernel.probes.loops.structure` makes of a jaxpr (`[[name, [sub, ...]], ...]`), of
jaxprs this side traces itself; the scanned loop's size is read from its exported program.

What each hidden check's verdict rests on (*observed*: the trusted side drove it and saw it
happen; *verified*: an artifact the trusted side examined and ran itself; *evidence only*: a
probe's word, believed), and what a student would have to forge to pass without doing the work.
Anything in the student's kernel can be replaced, the course's probes included:

- `check_scanned_result`: *verified*. Fresh shapes, lengths and values picked here; the
  student's `scanned` is called as it is (through the channel, arrays sent from here), and at the
  loop length drawn here its program, jitted and exported in its kernel (`checks.programs`;
  jax.debug prints left out), is compiled and run here; the results are compared with a float64
  NumPy recurrence computed here, within float32's tolerance (`checks.numerics`: the recurrence
  has no matrix product, so it is float32 arithmetic on every backend, a TPU's included).
  Forging means returning the recurrence's final state for inputs it sees only then, and handing
  in a program that computes it: the task.
- `check_scanned_size`: *verified*. The program of `jax.jit(scanned)` is exported at two loop
  lengths picked here (one of 20 to 40 steps, one of 200 to 300) and read here: each must hold a
  loop (a `stablehlo.while`) and the longer must not hold more operations, constants left out,
  than half an operation per step more than the shorter (a Python loop adds several per step; a
  scan unrolled in part, `unroll=k`, varies by a few steps' worth, never with the length). Each
  program is then run here on its inputs and must give the recurrence computed here, or else what
  `scanned` itself returns on them (a scan with a wrong carry keeps these points: it loses the
  result's), so the programs examined are the student's loop's. A forger whose `scanned` is a
  Python loop would have to hand in a program of constant size computing what its loop does: a
  scan written for the purpose, which is the solution.
- `check_measure_equations`: *verified* where the grader's recount stands. `measure` is handed
  functions built in its kernel from course code (a nested jit and scan; the lesson's unrolled
  loop at a fresh length); this side builds the same functions for the same shapes, traces them
  itself and counts, so an honest `measure` must count every level. That count comes back as the
  probe's number, which a replaced probe can make up (counting those functions with the course's
  own code, `measure` never run). So the grader also runs the `measure` cell alone, in a sandboxed
  process of its own (grading/recount.py, kernel/recount.py: the lesson's cells before it from
  source/, and of the other cells only the definitions and imports it uses), on functions built
  from a seed drawn at grading time, and writes what it counted where only this kernel reads
  (`check_recount`); this side builds the seed's functions, counts them and requires the same
  counts. A forger would have to make the measure cell itself count fresh functions: the task.
  Where the cell lacks something apart (a name no statement it can take along binds, a module not
  installed) and then fails, or the recount did not get to the student's cells, the probe's count
  stands, *evidence only*, and the grader flags the notebook; a failure after a clean start with
  nothing lacking is the student's (grading/recount.py's `outcome_of`).
- `check_measure_compile_apart`: *observed*, the span's number *evidence*. `measure` is handed
  the instrument (`probes.loops.instrument`), a plain function each stage of whose compilation
  reports to this side's `Program`: its trace (its Python body asks for its size), its lowering
  (a marking primitive's lowering rule runs in `.lower()`) and its compilation (JAX's compile
  event, seen by a listener the probe registers while `measure` runs), and each run of its
  program (a host callback). This side holds each report for a time it draws and never tells
  (each stage 1.5 to 2.5 calibrated compilations, each run five), and records when each began
  and ended on its own clock. Both clocks tick alike, so the student's span is set beside the
  spans a measure could have taken over each path seen: the whole path (trace, lower, compile),
  the path without its trace (jax.make_jaxpr first), without its compilation (compile() after
  the second clock read), the compilation alone, and the first two with the run that followed.
  Every part lasts at least its hold, so these lie a hold or more apart; the span passes when the
  whole path is the nearest (and the span is not shorter than it, less a few milliseconds of
  clock reads). The first run after each compilation is held twice as long as a warm run, in
  every run of the check, so a warm sample that holds it (a timer without its first call apart)
  is longer than the middle of the two holds, and an honest one shorter. A busy machine lengthens a
  path and the span that holds it alike. A forger (a replaced probe) would have to report, for a
  span, the length of a path it really went through: tracing, lowering and compiling the
  instrument, each held here.
- `check_loop_growth`: *observed*. The student's `loop_growth` is called from here on sweeps
  drawn here at a fresh scale (`growth_cases`: one of each verdict, lengths by doublings or even
  steps, ascending, longest first and shuffled, one with a slow compile inside the sweep); both
  least-squares slopes, the compile line at the shortest and longest length (each within
  GROWTH_RTOL of its scale) and the verdict (exactly) must be the ones computed here. No clock is
  read: the runs are timed by the course's given timer (performance-01's, graded there).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import CheckFailed, MachineBusy, numerics, programs, remote, trusted
from .student_calls import call_student, number

HOLD_FACTOR = (1.5, 2.5)     # each stage's hold, in calibrated compilations (drawn per stage and run)
RUN_HOLD_FACTOR = 5.0        # each run's hold in the compile check, in calibrated compilations
FIRST_RUN_HOLD_FACTOR = 10.0  # the hold of a freshly compiled program's first run there: a first run kept
                              # among the warm samples is then longer than any warm run, in every run
CLOCK_SLACK = 0.005          # seconds a span may fall short of its path: clock reads, the channel
HOLD_LEAST = 0.04            # seconds: the unit of a hold when compiling takes less
WAIT_WORK = 0.2              # seconds of device work in each run of the wait check (no host callback: calls return
                             # before their runs end, so a sample read without waiting is far shorter)
WAIT_MARGIN = 8              # a waited sample is at least WAIT_WORK / WAIT_MARGIN: the work's trip count comes from a
                             # calibration that load may have slowed (a factor of 2 failed the solution once in the
                             # end-to-end tier), and a dispatch takes well under 25 ms
STEPS = (1, 3)               # unrolled steps of the instrument (picked here: part of its program)

__all__ = ["FIRST_RUN_HOLD_FACTOR", "GROWTH_VERDICTS", "HOLD_FACTOR", "RUN_HOLD_FACTOR",
           "Calibration", "MeasureRun", "Program", "calibrate", "check_loop_growth", "check_measure_compile_apart",
           "check_measure_equations", "check_scanned_result", "check_scanned_size", "compile_span_problems",
           "count_equations", "count_structure", "expected_growth", "growth_cases", "run_instrument",
           "top_level_equations", "unwaited_run_problems", "WAIT_MARGIN", "WAIT_WORK"]


# --------------------------------------------------------------------------- equation counts

def _structure(jaxpr):
    from ..kernel.probes import loops as probe

    return jaxpr if isinstance(jaxpr, list) else probe.structure(jaxpr)


def count_structure(structure, _depth: int = 0) -> int:
    """Operations in a jaxpr's structure, counting nested jaxprs' operations instead of their holders."""
    if not isinstance(structure, list) or _depth > 20:
        raise CheckFailed("the jaxpr structure is not a list of equations")
    total = 0
    for eqn in structure:
        if not (isinstance(eqn, list) and len(eqn) == 2 and isinstance(eqn[0], str) and isinstance(eqn[1], list)):
            raise CheckFailed("the jaxpr structure holds an entry that is not [name, [nested jaxprs]]")
        inner = eqn[1]
        total += sum(count_structure(sub, _depth + 1) for sub in inner) if inner else 1
    return total


def count_equations(jaxpr) -> int:
    """Operations in a (closed or open) jaxpr, or in its structure, nested jaxprs counted by content."""
    return count_structure(_structure(jaxpr))


def top_level_equations(jaxpr) -> int:
    """Equations at the top level only: a nested jaxpr counts as one."""
    return len(_structure(jaxpr))


# --------------------------------------------------------------------------- the scanned loop

def _recurrence(h, xs, a):
    h, a = h.astype(np.float64), a.astype(np.float64)
    for x in xs.astype(np.float64):
        h = np.tanh(a * h + x)
    return h


def _loop_inputs(rng: np.random.Generator, length: int, batch: int, width: int):
    return (rng.standard_normal((batch, width)).astype(np.float32),
            rng.standard_normal((length, batch, width)).astype(np.float32),
            rng.uniform(-0.9, 0.9, width).astype(np.float32))


def _scanned_program(scanned, args, what="jax.jit(scanned)"):
    """scanned, jitted and exported in the student's kernel for these arguments' shapes: a program
    deserialized and checked here (`checks.programs`)."""
    return programs.exported(scanned, programs.specs_of(*args), what=what, drop_debug_callbacks=True)


def _run_here(program, args, batch: int, width: int, what: str) -> np.ndarray:
    """The exported program compiled and run in this kernel on these arguments."""
    try:
        value = program.call(*args)
    except Exception as exc:
        raise CheckFailed(f"{what} did not run as a JAX program for the arguments it was exported for "
                          f"({type(exc).__name__})") from None
    return trusted.array(value, dtype=np.float32, shape=(batch, width))


def check_scanned_result(scanned, rng: np.random.Generator | None = None) -> None:
    """Fresh shapes, lengths and values, called as it is, against float64 NumPy here; and jitted
    (its program exported from the student's kernel and run here) at the loop length drawn here."""
    import jax.numpy as jnp

    rng = rng or np.random.default_rng()
    precision = numerics.elementwise_precision()  # no matrix product: float32, with this backend's tanh
    for length, batch, width in [(1, 1, 5), (int(rng.integers(2, 40)), 3, 7), (50, 2, 16)]:
        h, xs, a = _loop_inputs(rng, length, batch, width)
        expected = _recurrence(h, xs, a)
        args = (jnp.asarray(h), jnp.asarray(xs), jnp.asarray(a))
        where = "(a loop length and a state shape picked at grading time)"
        value = trusted.array(scanned(*args), dtype=np.float32, shape=(batch, width))
        numerics.check_close(value, expected, f"scanned on fresh inputs {where}", precision=precision)
        if batch == 3:  # one program (compiled here) is enough to show what jit makes of it
            value = _run_here(_scanned_program(scanned, args), args, batch, width, "jax.jit(scanned)")
            numerics.check_close(value, expected, f"jax.jit(scanned) on fresh inputs {where}",
                                 precision=precision)


SIZE_STATE = (2, 3)                    # (batch, width) of the size check's inputs
SIZE_LENGTHS = ((20, 40), (200, 300))  # a loop length is drawn from each range


def size_lengths(rng: np.random.Generator) -> tuple[int, ...]:
    """Loop lengths for the size check: a short one and a long one, at least 160 steps apart, both
    longer than any partial unrolling a scan is likely to ask for."""
    return tuple(int(rng.integers(low, high + 1)) for low, high in SIZE_LENGTHS)


def program_size(program) -> int:
    """Operations of an exported program, constants left out: MLIR shares a constant between uses
    of one value, so their number moves with the values a loop length happens to share."""
    return sum(1 for name in programs.operations(program) if name != "stablehlo.constant")


def check_scanned_size(scanned, lengths=None, rng: np.random.Generator | None = None) -> None:
    """The program of jax.jit(scanned), exported from the student's kernel at loop lengths picked
    here, holds a loop (a stablehlo.while) and does not grow with the length (a scan unrolled in
    part, `unroll=k`, varies by a few steps' operations, never by one per step); and each program,
    run here on fresh inputs, computes the recurrence, or else what scanned itself computes on the
    same inputs (a loop with a wrong carry keeps these points: it loses the result's)."""
    import jax.numpy as jnp

    rng = rng or np.random.default_rng()
    lengths = sorted(int(n) for n in (lengths if lengths is not None else size_lengths(rng)))
    batch, width = SIZE_STATE
    exported = []
    for length in lengths:
        values = _loop_inputs(rng, length, batch, width)
        args = tuple(jnp.asarray(v) for v in values)
        exported.append((length, _scanned_program(scanned, args), args, values))
    if any("stablehlo.while" not in programs.operations(program) for _, program, _, _ in exported):
        raise CheckFailed("the program of jax.jit(scanned) holds no loop at a loop length picked at grading time: "
                          "every step is written out. Is a Python loop still unrolling? Use lax.scan (or "
                          "lax.fori_loop) over the steps")
    (short, first, _, _), (long, last, _, _) = exported[0], exported[-1]
    sizes = program_size(first), program_size(last)
    if sizes[1] - sizes[0] >= (long - short) / 2:
        raise CheckFailed(f"the program of jax.jit(scanned) grows with the loop length: from {sizes[0]} to "
                          f"{sizes[1]} operations over loop lengths picked at grading time. Is part of the "
                          "loop still a Python loop? Put every step inside lax.scan")
    tolerance = numerics.tolerance(numerics.elementwise_precision())
    for _, program, args, values in exported:
        # The programs examined above are the loop's: each computes the recurrence, or else what
        # scanned itself computes (called as it is) on the same inputs.
        ran = _run_here(program, args, batch, width, "the program of jax.jit(scanned)")
        if np.all(np.isfinite(ran)) and np.allclose(ran, _recurrence(*values), **tolerance):
            continue
        direct = trusted.array(scanned(*args), dtype=np.float32, shape=(batch, width))
        if not np.all(np.isfinite(ran)) or not np.allclose(ran, direct, **tolerance):
            raise CheckFailed("the program exported from jax.jit(scanned), run by the grader, and scanned called as "
                              "it is give different results on the same inputs: scanned must compute the same "
                              "thing with and without jit (was perfcourse.kernel.probes replaced?)")


# --------------------------------------------------------------------------- the measurement

def _result(value, warm_calls: int | None = None, timings: bool = True) -> dict:
    """The dict measure returned, as plain numbers, or a clear CheckFailed. Only the cell that
    judges a part of it checks that part (`timings`, and the number of run times: `warm_calls`)."""
    if not isinstance(value, dict):
        raise CheckFailed(f"measure must return a dict, got {type(value).__name__}")
    missing = {"equations", "compile_seconds", "run_seconds"} - set(value)
    if missing:
        raise CheckFailed(f"measure's dict is missing {sorted(missing)}")
    if not timings:
        return dict(value)
    try:
        compile_seconds = float(value["compile_seconds"])
        run_seconds = [float(s) for s in value["run_seconds"]]
    except (TypeError, ValueError):
        raise CheckFailed("compile_seconds should be a number of seconds and run_seconds a list of them") from None
    if not all(math.isfinite(s) for s in (compile_seconds, *run_seconds)):
        raise CheckFailed("timings should be finite numbers of seconds")
    if warm_calls is not None and len(run_seconds) != warm_calls:
        raise CheckFailed(f"with warm_calls={warm_calls} measure returned {len(run_seconds)} run times")
    return {"equations": value["equations"], "compile_seconds": compile_seconds, "run_seconds": run_seconds}


def check_measure_equations(measure, rng: np.random.Generator | None = None) -> None:
    """Functions whose operations are nested (a jit inside, a scan) and the unrolled loop at a fresh
    length: measure's count must be every level's operations, counted here."""
    import jax
    import jax.numpy as jnp

    from ..kernel.probes import loops as probe

    rng = rng or np.random.default_rng()
    for kind, length in [("nested", int(rng.integers(2, 30))), ("unrolled", int(rng.integers(3, 20)))]:
        args = tuple(jnp.asarray(v) for v in _loop_inputs(rng, length, 3, 5))
        expected = count_structure(probe.structure(jax.make_jaxpr(probe.build(kind))(*args)))
        result = _result(remote.probe("loops.run_measure", measure, kind, args, 2), timings=False)
        counted = result["equations"]
        try:
            counted = int(counted)
        except (TypeError, ValueError):
            raise CheckFailed(f"equations should be an integer, got {type(counted).__name__}") from None
        if counted != expected:
            raise CheckFailed(
                f"a function with a nested jit and scan: measure counted {counted} equations, its jaxpr has "
                f"{expected} (count the operations inside nested jaxprs too)" if kind == "nested" else
                f"the unrolled loop: measure counted {counted} equations, its jaxpr has {expected}")
    check_recount()


RECOUNT_WAIT = 45.0  # seconds the check waits for the grader's recount (grading/recount.py runs it for 40 at most)
RECOUNT_BYTES = 1 << 16


def _recount_result() -> dict | None:
    """The grader's recount of this notebook (grading/recount.py), or None: no grader runs one here
    (no channel: tests and the project's checker), or none came in time (the grader flags that)."""
    from ..kernel import recount

    channel = remote.channel_path()
    if not channel:
        return None
    from pathlib import Path

    path = recount.result_path(Path(channel).parent)
    deadline = time.monotonic() + RECOUNT_WAIT
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        with open(path, encoding="utf-8") as file:
            result = json.loads(file.read(RECOUNT_BYTES))
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else None


def recounted_equations(seed: int) -> list[int]:
    """Every level's operations of the functions `seed` builds (kernel/recount.py), counted here."""
    import jax
    import jax.numpy as jnp

    from ..kernel import recount
    from ..kernel.probes import loops as probe

    return [count_structure(probe.structure(jax.make_jaxpr(fn)(*(jnp.asarray(a) for a in args))))
            for fn, args in recount.seeded_functions(seed)]


def recount_problem(result: dict | None) -> str | None:
    """What is wrong with measure as the grader ran it apart from the notebook, on functions built
    from a seed drawn at grading time; None when it counted them as this side does, when nothing
    was recounted, or when the recount could not stand for the notebook (`fallback`: the grader
    flags it, and the probe's count stands, as evidence)."""
    if result is None or "fallback" in result:
        return None
    where = ("measure, run by the grader apart from the notebook's other cells (only the definitions and imports "
             "it uses) on functions built at grading time")
    if "error" in result:
        return f"{where}, did not count: {str(result['error'])[:300]}"
    try:
        counts, expected = [int(c) for c in result["counts"]], recounted_equations(int(result["seed"]))
    except (KeyError, TypeError, ValueError):
        return f"{where}: its answer could not be read"
    if counts != expected:
        return (f"{where}, counted {counts} equations where their jaxprs have {expected}: count every level, "
                "nested jaxprs included, in measure itself (was perfcourse.kernel.probes replaced?)")
    return None


def check_recount() -> None:
    """measure's count, verified on the grader's run of the measure cell alone (kernel/recount.py);
    a run the grader could not judge (grading/recount.py's "undecided") is MachineBusy, never a verdict."""
    result = _recount_result()
    if result is not None and "undecided" in result:
        raise MachineBusy(f"measure, run by the grader apart from the notebook, could not be judged: "
                          f"{str(result['undecided'])[:300]}")
    problem = recount_problem(result)
    if problem:
        raise CheckFailed(problem)


class Program:
    """What the instrument reports: its trace (asking for its size), its lowering, its compilation
    and, where it carries the run report, each run. Each report is counted and timed here, on this
    side's clock, and held for a time drawn here and never told (`holds`: trace, lower, compile,
    run, and the first run after a compilation), so each stage lasts at least its hold and its place
    in time is known here."""

    STAGES = ("trace", "lower", "compile", "run", "first run")

    def __init__(self, steps: int, salt: float, holds: tuple = (0.0, 0.0, 0.0, 0.0, 0.0)):
        self.steps, self.salt = int(steps), float(salt)
        self._holds = dict(zip(self.STAGES, (float(h) for h in holds)))
        self._events: list[tuple[str, float, float]] = []  # (stage, began, ended) on this side's clock
        self._fresh = True  # no run since the last compilation: the next run is a first run

    def _held(self, stage: str, hold: str | None = None) -> None:
        began = time.monotonic()
        time.sleep(self._holds.get(hold or stage, 0.0))
        self._events.append((stage, began, time.monotonic()))

    def trace(self):
        self._held("trace")
        return self.steps, self.salt

    def lowered(self) -> None:
        self._held("lower")

    def lowerings(self) -> int:
        return self._count("lower")

    def compiled(self) -> None:
        self._held("compile")
        self._fresh = True

    def ran(self) -> None:
        fresh, self._fresh = self._fresh, False
        self._held("run", "first run" if fresh else "run")

    def _count(self, stage: str) -> int:
        return sum(1 for kind, _, _ in self._events if kind == stage)

    @property
    def traces(self) -> int:
        return self._count("trace")

    def _paths(self) -> list[dict]:
        """Each trace, lowering and compile that ran in that order with nothing between (one
        compilation's whole path), as the moments that bound its parts, on this side's clock:
        the trace's start, the lowering's start and end, the compile report's end."""
        found = []
        for i in range(len(self._events) - 2):
            (k0, t0, _), (k1, l0, l1), (k2, _, c1) = self._events[i:i + 3]
            if (k0, k1, k2) == ("trace", "lower", "compile"):
                found.append({"trace": t0, "lower": l0, "lowered": l1, "compiled": c1})
        return found

    def _run_after(self, moment: float) -> tuple[float, float] | None:
        """The first run that began after `moment`: (began, ended), or None."""
        return next(((began, ended) for kind, began, ended in self._events
                     if kind == "run" and began >= moment), None)


@dataclass
class Calibration:
    steps: int
    compile_seconds: float         # the fastest fresh trace, lowering and compilation of the instrument
    seconds_per_iteration: float   # of its device loop

    def iterations(self, seconds: float) -> int:
        return max(1, int(seconds / self.seconds_per_iteration))


_calibration: Calibration | None = None


def _instrument_args(rng: np.random.Generator, spins: int):
    import jax.numpy as jnp

    batch, width, length = int(rng.integers(1, 5)), int(rng.integers(2, 9)), int(rng.integers(2, 7))
    return tuple(jnp.asarray(v) for v in _loop_inputs(rng, length, batch, width)) + (jnp.int32(spins),)


def calibrate() -> Calibration:
    """The instrument's compile time and loop speed on this machine, measured in this process."""
    global _calibration
    if _calibration is None:
        import jax

        from ..kernel.probes import loops as probe

        rng = np.random.default_rng()
        steps = int(rng.integers(STEPS[0], STEPS[1] + 1))
        compile_best, compiled = math.inf, None
        for _ in range(4):  # a fresh program each time (another salt): no cache can answer
            fn = probe.instrument(Program(steps, float(rng.uniform(0.01, 0.99))))
            args = _instrument_args(rng, 1)
            start = time.perf_counter()  # the whole path, as measure times it: trace, lower, compile
            compiled = jax.jit(fn).lower(*args).compile()
            compile_best = min(compile_best, time.perf_counter() - start)
        iterations, run_best = 4_000_000, math.inf
        jax.block_until_ready(compiled(*args[:-1], jax.numpy.int32(10)))
        for _ in range(5):
            start = time.perf_counter()
            jax.block_until_ready(compiled(*args[:-1], jax.numpy.int32(iterations)))
            run_best = min(run_best, time.perf_counter() - start)
        _calibration = Calibration(steps, compile_best, run_best / iterations)
    return _calibration


@dataclass
class MeasureRun:
    result: dict
    traces: int
    work: float             # calibrated seconds of every run of the compiled program
    compile_work: float     # calibrated seconds of its whole compilation path
    holds: tuple = ()       # seconds this side held the trace, the lowering, the compile, each run, a first run
    paths: list = field(default_factory=list)  # the moments bounding each whole compilation path seen here
    runs_after: list = field(default_factory=list)  # (began, ended) of the first run after each path


def run_instrument(measure, work_seconds: float, warm_calls: int, rng=None, staged: bool = False) -> MeasureRun:
    """Run `measure(instrument, *args, warm_calls=N)` in the student's kernel; judge nothing yet.
    `staged`: each stage and run is held here for a time drawn here (the compile check)."""
    rng = rng if rng is not None else np.random.default_rng()
    calibration = calibrate()
    unit = max(HOLD_LEAST, calibration.compile_seconds)
    holds = (tuple(float(rng.uniform(*HOLD_FACTOR)) * unit for _ in range(3))
             + (RUN_HOLD_FACTOR * unit, FIRST_RUN_HOLD_FACTOR * unit) if staged else (0.0,) * 5)
    program = Program(calibration.steps, float(rng.uniform(0.01, 0.99)), holds)
    args = _instrument_args(rng, calibration.iterations(work_seconds))
    kind = "staged-instrument" if staged else "instrument"
    value = remote.probe("loops.run_measure", measure, kind, args, warm_calls, program)
    result = _result(value, warm_calls)
    if not result["run_seconds"]:
        raise CheckFailed("measure returned no run times")
    if program.traces <= 0:
        raise CheckFailed("measure never traced fn: it must compile and run the function it is given")
    paths = program._paths()
    return MeasureRun(result, program.traces, work_seconds, calibration.compile_seconds, holds, paths,
                      [program._run_after(path["compiled"]) for path in paths])


def compile_span_problems(run: MeasureRun) -> list[str]:
    """The compile span is one whole compilation path seen here (trace, lower and compile in turn,
    each held here), with no run inside it.

    Both clocks tick alike, so the student's span and this side's record can be set side by side.
    For each path seen, the spans a measure could have taken are known here: the whole path (the
    honest one); without the trace (made earlier, by jax.make_jaxpr say); without the compilation
    (compile() after the second clock read); the compilation alone; and the first two with the
    run that followed. Each part is held here at least one hold, so these lengths lie apart. The
    span passes when the whole path is the nearest of them (and it is not shorter than the path
    less the clock's slack); else the nearest names the mistake."""
    span = run.result["compile_seconds"]
    if not run.paths:
        return [NO_PATH]
    verdicts = []
    for path, following in zip(run.paths, run.runs_after):
        candidates = {
            "whole": path["compiled"] - path["trace"],
            "no trace": path["compiled"] - path["lower"],
            "no compile": path["lowered"] - path["trace"],
            "compile only": path["compiled"] - path["lowered"],
        }
        if following is not None:
            candidates["whole and a run"] = following[1] - path["trace"]
            candidates["no trace and a run"] = following[1] - path["lower"]
        nearest = min(candidates, key=lambda name: abs(span - candidates[name]))
        if nearest == "whole" and span >= candidates["whole"] - CLOCK_SLACK:
            return []
        verdicts.append(RUN_INSIDE_COMPILE if nearest.endswith("a run") else STAGES_MISSING)
    return [RUN_INSIDE_COMPILE if RUN_INSIDE_COMPILE in verdicts else STAGES_MISSING]


def first_run_problems(run: MeasureRun) -> list[str]:
    """No warm sample holds a first run. Each warm run is held here RUN_HOLD_FACTOR calibrated
    compilations, the first run after a compilation FIRST_RUN_HOLD_FACTOR: a sample that holds a
    first run lasts at least its hold, one of a warm run its hold and the time its call takes to
    reach this side, so a sample past the middle of the two holds is a first run's."""
    run_hold, first_hold = run.holds[3:5]
    if not first_hold > run_hold:
        return []
    if any(s >= (run_hold + first_hold) / 2 for s in run.result["run_seconds"]):
        return [FIRST_RUN_IN_SAMPLES]
    return []


NO_PATH = ("measure never traced, lowered and compiled fn in one go: time jax.jit(fn).lower(*args).compile() "
           "on a function JAX has not seen")
STAGES_MISSING = ("compile_seconds is shorter than tracing, lowering and compiling this function took: "
                  "time the whole path, jax.jit(fn).lower(*args).compile(), between the two clock reads, "
                  "before anything else traces or runs fn (jax.make_jaxpr traces it, and a later .lower() "
                  "reuses that trace; a .compile() after the second clock read leaves compilation out)")
RUN_INSIDE_COMPILE = ("compile_seconds holds a run of the program: time jax.jit(fn).lower(*args).compile() "
                      "alone, not a call of the function")
FIRST_RUN_IN_SAMPLES = ("run_seconds holds the compiled program's first run (or a compilation): keep it apart, "
                        "as time_completed(compiled, *args, warm_calls=warm_calls) does, and return only the "
                        "warm samples")


def unwaited_run_problems(run: MeasureRun) -> list[str]:
    """Each run of the unheld instrument does `run.work` calibrated seconds of device work, and its call
    returns before that work ends: a sample shorter than a WAIT_MARGIN-th of it read the clock before the
    result was ready."""
    if run.work > 0 and any(s < run.work / WAIT_MARGIN for s in run.result["run_seconds"]):
        return [UNWAITED_RUNS]
    return []


UNWAITED_RUNS = ("run_seconds end before the runs do: read the clock after each result is ready "
                 "(jax.block_until_ready), as time_completed(compiled, *args, warm_calls=warm_calls) does")


def check_measure_compile_apart(measure, warm_calls: int = 2, rng=None) -> None:
    """The compile span is one whole compilation path seen here, and holds no run (see
    `compile_span_problems`); the run times are warm runs only (`first_run_problems`). The
    instrument's runs report themselves here (a host callback, so this instrument's calls wait for
    their results); so an instrument without that report, whose calls return at once, then tells
    whether each run time waited for its result (`unwaited_run_problems`)."""
    run = run_instrument(measure, 0.0, warm_calls, rng, staged=True)
    problems = compile_span_problems(run) + first_run_problems(run)
    if not problems:
        problems = unwaited_run_problems(run_instrument(measure, WAIT_WORK, warm_calls, rng))
    if problems:
        raise CheckFailed(problems[0])


# --------------------------------------------------------------------------- reading the sweep

GROWTH_VERDICTS = {(True, True): "both grow", (False, False): "neither grows",
                   (False, True): "only compile time grows", (True, False): "only the equations grow"}
GROWTH_RTOL = 1e-6   # of the quantity's own scale: any least-squares method in float64 agrees far closer
GROWS, FLAT = 2.6, 1.5  # drawn sweeps grow at least this much, or at most that much (the rule's line is 2)
ENDS_MISLEAD = 1.1      # a sweep with a slow end: its two end samples alone are this far across the rule's line

GROWTH_HINTS = {
    "equations_per_step": "equations_per_step is the slope of the least-squares line of the equation counts "
                          "against the lengths (every sample, not the two ends)",
    "seconds_per_step": "seconds_per_step is the slope of the least-squares line of the compile times against "
                        "the lengths (every sample, not the two ends)",
    "shortest_seconds": "shortest_seconds is the compile times' line at the shortest length (the smallest "
                        "length, wherever it stands in the lists)",
    "longest_seconds": "longest_seconds is the compile times' line at the longest length (the largest length, "
                       "wherever it stands in the lists)",
    "verdict": "a quantity grows when its line at the longest length is at least twice its line at the shortest; "
               "the verdict is 'both grow', 'neither grows', 'only compile time grows' or 'only the equations grow'",
}


def least_squares(lengths, values) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line of `values` against `lengths`, in float64."""
    x, y = np.asarray(lengths, np.float64), np.asarray(values, np.float64)
    dx = x - x.mean()
    slope = float(np.dot(dx, y - y.mean()) / np.dot(dx, dx))
    return slope, float(y.mean() - slope * x.mean())


def expected_growth(lengths, equations, compile_seconds) -> dict:
    """The lesson's Task 3, computed here: both lines' slopes, the compile line at the ends of the
    sweep, and the verdict (a quantity grows when its line at the longest length is at least twice
    its line at the shortest)."""
    shortest, longest = min(lengths), max(lengths)
    grows = {}
    for name, values in (("equations", equations), ("seconds", compile_seconds)):
        slope, intercept = least_squares(lengths, values)
        grows[name] = intercept + slope * longest >= 2 * (intercept + slope * shortest)
        if name == "seconds":
            seconds_per_step, ends = slope, (intercept + slope * shortest, intercept + slope * longest)
        else:
            equations_per_step = slope
    return {"equations_per_step": equations_per_step, "seconds_per_step": seconds_per_step,
            "shortest_seconds": ends[0], "longest_seconds": ends[1],
            "verdict": GROWTH_VERDICTS[grows["equations"], grows["seconds"]]}


def _sweep_lengths(rng: np.random.Generator) -> list[int]:
    """A sweep's loop lengths, the longest at least four times the shortest: doublings, or even steps."""
    if rng.random() < 0.5:
        start = int(rng.integers(2, 17))
        return [start * 2 ** i for i in range(int(rng.integers(3, 8)))]
    step = int(rng.integers(4, 41))
    return [step * i for i in range(1, int(rng.integers(4, 9)) + 1)]


def _ratio(expected: dict) -> float:
    shortest, longest = expected["shortest_seconds"], expected["longest_seconds"]
    return longest / shortest if shortest > 0 else math.inf


def _ends_say_flat(lengths, seconds) -> bool:
    """Do the sweep's two end samples alone say, clearly (ENDS_MISLEAD), that it does not grow?"""
    shortest, longest = lengths.index(min(lengths)), lengths.index(max(lengths))
    return seconds[longest] / seconds[shortest] <= 2 / ENDS_MISLEAD


def _growth_case(rng: np.random.Generator, program_grows: bool, compile_grows: bool, order: str,
                 slow_compile: bool = False, slow_end: bool = False):
    """(lengths, equations, compile_seconds) of one sweep, drawn until its compile line's growth is
    clearly on one side of the rule's line (GROWS or FLAT) with a positive slope, in the order asked:
    'ascending' (as the lesson sweeps), 'descending' (longest first) or 'shuffled'. With `slow_end`,
    the shortest length's compile was slow, so that the two end samples alone say the compile time
    does not grow, where the line through every sample does (a growing line only: an end's sample
    weighs so much in a line that a slow longest one moves a flat line across the rule's too)."""
    for _ in range(2000 if slow_end else 200):
        lengths = _sweep_lengths(rng)
        low, high = min(lengths), max(lengths)
        if program_grows:
            fixed_count, per_step_count = int(rng.integers(0, 9)), int(rng.integers(2, 10))
            equations = [fixed_count + per_step_count * n for n in lengths]
        else:
            equations = [int(rng.integers(3, 21))] * len(lengths)
        fixed = float(10 ** rng.uniform(-2.5, 0))  # seconds: a few milliseconds to a second
        target = (float(rng.uniform(3.0, 0.8 * high / low)) if compile_grows
                  else float(rng.uniform(1.05, 1.3)))
        per_step = fixed * (target - 1) / (high - target * low)
        seconds = [(fixed + per_step * n) * float(1 + rng.normal(0, 0.04)) for n in lengths]
        if slow_compile:  # one slow compile (another process, say) at a length inside the sweep
            seconds[int(rng.integers(1, len(lengths) - 1))] *= float(rng.uniform(1.8, 2.6))
        if slow_end:
            seconds[0] *= float(rng.uniform(1.8, 3.0))
        expected = expected_growth(lengths, equations, seconds)
        ratio = _ratio(expected)
        # A slow compile inside a flat sweep puts its slowest sample past twice its fastest, so a verdict
        # read from the samples' extremes says it grows (one at 1.4-1.8x passed such a verdict 94% of runs).
        if expected["seconds_per_step"] > 0 and (ratio >= GROWS if compile_grows else ratio <= FLAT) \
                and (not slow_end or _ends_say_flat(lengths, seconds)) \
                and (not slow_compile or max(seconds) >= 2 * ENDS_MISLEAD * min(seconds)):
            break
    else:
        raise RuntimeError("no sweep drawn with a clear growth")
    order_of = {"ascending": list(range(len(lengths))), "descending": list(range(len(lengths)))[::-1],
                "shuffled": [int(i) for i in rng.permutation(len(lengths))]}[order]
    if order == "shuffled" and order_of[0] == 0 and order_of[-1] == len(lengths) - 1:
        order_of = order_of[::-1]  # neither end where a sorted sweep would have it
    return ([lengths[i] for i in order_of], [equations[i] for i in order_of], [seconds[i] for i in order_of])


def growth_cases(rng: np.random.Generator) -> list[tuple[str, list, list, list]]:
    """(what, lengths, equations, compile_seconds): one sweep of each verdict, at a fresh scale,
    in ascending, descending and shuffled order, one with a slow compile inside the sweep, and one
    whose slow compile at its shortest length makes the two end samples say the other verdict."""
    return [
        ("an unrolled loop swept in ascending order", *_growth_case(rng, True, True, "ascending")),
        ("a scanned loop swept longest first, one compile slow", *_growth_case(rng, False, False, "descending",
                                                                               slow_compile=True)),
        ("a scan unrolled while lowering, swept in a shuffled order", *_growth_case(rng, False, True, "shuffled")),
        ("an unrolled loop whose fixed compile cost hides its growth, shuffled",
         *_growth_case(rng, True, False, "shuffled")),
        ("an unrolled loop whose shortest compile was slow, shuffled", *_growth_case(rng, True, True, "shuffled",
                                                                                     slow_end=True)),
    ]


def growth_problems(got, lengths, equations, compile_seconds, what: str) -> list[str]:
    """`got` against this side's reading, key by key: each number within GROWTH_RTOL of its own
    scale (a slope that is zero here may be a rounding error away from it there), the verdict exactly."""
    from .roofline import key_problems

    if not isinstance(got, dict):
        return [f"loop_growth should return a dict, got {type(got).__name__} ({what})"]
    span, largest = max(lengths) - min(lengths), max(map(abs, compile_seconds))
    scales = {"equations_per_step": max(map(abs, equations)) / span, "seconds_per_step": largest / span,
              "shortest_seconds": largest, "longest_seconds": largest}

    def close(key, value, expected):
        value = number(value)
        return value is not None and abs(value - expected) <= GROWTH_RTOL * max(abs(expected), scales[key])

    return key_problems(got, expected_growth(lengths, equations, compile_seconds), GROWTH_HINTS, what, close)


def loop_growth_problems(loop_growth, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    for what, lengths, equations, compile_seconds in growth_cases(rng):
        got = call_student(f"loop_growth for {what}", loop_growth, list(lengths), list(equations),
                           list(compile_seconds))
        problems = growth_problems(got, lengths, equations, compile_seconds, what)
        if problems:
            return problems
    return []


def check_loop_growth(loop_growth, rng=None) -> None:
    """Sweeps drawn here, one of each verdict (`growth_cases`); every number within GROWTH_RTOL of
    its scale, the verdict exactly."""
    problems = loop_growth_problems(loop_growth, rng)
    if problems:
        raise CheckFailed("; ".join(problems))
