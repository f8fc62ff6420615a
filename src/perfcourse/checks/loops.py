"""Grade loops and their measurement (lesson performance-04) from outside the student's process.

Counting. `count_equations(jaxpr)` counts the operations of a jaxpr wherever they are nested: an
equation that only holds other jaxprs (a nested jit, scan, while, cond) counts as the operations
inside it, not as one more, so `make_jaxpr(f)` and `make_jaxpr(jax.jit(f))` count the same, and
the count depends on no primitive name. It walks the plain structure that
`perfcourse.kernel.probes.loops.structure` makes of a jaxpr (`[[name, [sub, ...]], ...]`), the
same form the student's kernel returns, so the trusted side counts a student's jaxpr with this
walker and never with code from the student's process.

The hidden checks, and what a student would have to forge to pass each without doing the work:

- `check_scanned_result`: fresh shapes, lengths and values picked here; the student's `scanned`
  is called as it is and jitted in its own kernel (`probes.loops.call_jitted`); both results are
  compared with a float64 NumPy recurrence computed here, within float32's tolerance
  (`checks.numerics`: the recurrence has no matrix product, so it is float32 arithmetic on every
  backend, a TPU's included). Forging means returning the right final state for inputs it sees
  only then: computing the recurrence, which is the task.
- `check_scanned_size`: the probe returns the structure of `jax.make_jaxpr(scanned)` for loop
  lengths picked here (up to 300); this side counts it. To pass with a Python loop, the student
  would have to replace the course's probe in its own process with one that returns a structure
  of the same size for every length, i.e. lie about its jaxpr on purpose.
- `check_measure_equations`: `measure` is handed functions built in its kernel from course code
  (a nested jit and scan; the lesson's unrolled loop at a fresh length); this side builds the same
  functions for the same shapes, traces them itself and counts. Forging means reporting the
  count of a jaxpr it is not shown: counting, which is the task.
- `check_measure_compile_apart` and `check_measure_synchronized`: `measure` is handed the
  instrument (`probes.loops.instrument`), a plain function whose trace asks this side's `Program`
  for its size (so traces are counted here) and whose compiled program runs a device loop of a
  trip count picked here, next to a matrix product that makes XLA's CPU client dispatch it
  asynchronously. This side calibrates, in its own process on the same machine (the fastest of a
  few runs), how long that program takes to compile (a fresh program each time: a salt picked
  here is part of it) and how long a loop iteration runs. Then, whatever clock `measure` reads:

      compile_seconds >= COMPILE_FLOOR * calibrated compile       (else: a cache hit, nothing compiled)
      compile_seconds <  RUN_IN_COMPILE * max(median run sample, calibrated work)   (else: a run inside)
      every run sample >= SYNC_FRACTION * calibrated work          (else: read before the result was ready)
      traces of fn <= number of run samples                         (else: the runs call fn, not the program)

  A run in the compile check has COMPILE_WORK_FACTOR calibrated compiles of work, so a correct
  compile span sits far from both lines; the run line also follows the student's own run samples,
  taken in the same process moments later, so a busy machine (which lengthens compiling and
  running alike) does not move a correct measurement across it. Another process can only lengthen
  a span, so the two lines are judged on repeated runs in opposite ways: a span under the floor
  in any of two runs (the second with almost no work: only its compile span is read) is a cache
  hit, since an honest compilation never measures that short, while a cache hit (under a
  millisecond) stalled by another process can rise above the floor once; a run inside the span
  counts only when a second run, calibrated again, shows it too. Forging means reporting, for a
  program whose compile and run times it is never told, a compile span between the two and run
  samples at least as long as the work: in practice, timing the compilation apart and waiting for
  every result, which is the task.

  Not told apart, by design or by limit: a compile span that holds an *unsynchronized* first call
  (compile plus a dispatch lasts about as long as the compilation); seconds all scaled by the same
  factor (milliseconds reported as seconds pass every line); a measure that replaces the course's
  probes in its own process.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import numpy as np

from . import CheckFailed, numerics, remote, trusted

COMPILE_FLOOR = 0.15         # a compilation measures at least this share of the calibrated compile
COMPILE_WORK_FACTOR = 8      # a run in the compile check: this many calibrated compiles of work
RUN_IN_COMPILE = 0.5         # compile_seconds this share of a run's length or longer holds a run
SYNC_WORK_SECONDS = 0.12     # calibrated work of a run in the synchronization check
SYNC_FRACTION = 0.15         # a synchronized measurement spans at least this much of its work
STEPS = (4, 12)              # unrolled steps of the instrument (picked here: part of its program)

__all__ = ["COMPILE_FLOOR", "COMPILE_WORK_FACTOR", "RUN_IN_COMPILE", "SYNC_FRACTION", "SYNC_WORK_SECONDS",
           "Calibration", "MeasureRun", "Program", "calibrate", "check_measure_compile_apart",
           "check_measure_equations", "check_measure_synchronized", "check_scanned_result",
           "check_scanned_size", "count_equations", "count_structure", "run_instrument",
           "top_level_equations"]


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


def check_scanned_result(scanned, rng: np.random.Generator | None = None) -> None:
    """Fresh shapes, lengths and values, with and without jit, against float64 NumPy here."""
    import jax.numpy as jnp

    rng = rng or np.random.default_rng()
    for length, batch, width in [(1, 1, 5), (int(rng.integers(2, 40)), 3, 7), (50, 2, 16)]:
        h, xs, a = _loop_inputs(rng, length, batch, width)
        expected = _recurrence(h, xs, a)
        args = (jnp.asarray(h), jnp.asarray(xs), jnp.asarray(a))
        for how, out in (("scanned", lambda: scanned(*args)),
                         ("jax.jit(scanned)", lambda: remote.probe("loops.call_jitted", scanned, *args))):
            value = trusted.array(out(), dtype=np.float32, shape=(batch, width))
            numerics.check_close(value, expected, f"{how} on fresh inputs (a loop length and a state shape "
                                 "picked at grading time)", precision=numerics.FLOAT32)


def check_scanned_size(scanned, lengths=(2, 5, 17, 120, 300), rng: np.random.Generator | None = None) -> None:
    """The same number of operations at every loop length (from 2: at length 1 JAX may leave out a
    slice that covers the whole axis), counted here from the jaxpr's structure."""
    import jax.numpy as jnp

    rng = rng or np.random.default_rng()
    counts = {}
    for length in lengths:
        args = tuple(jnp.asarray(v) for v in _loop_inputs(rng, length, 2, 3))
        counts[length] = count_structure(remote.probe("loops.jaxpr_structure", scanned, *args))
    if min(counts.values()) <= 0:
        raise CheckFailed("the scanned jaxpr holds no operations")
    if len(set(counts.values())) != 1:
        raise CheckFailed(f"the scanned jaxpr grows with the loop length: from {min(counts.values())} to "
                          f"{max(counts.values())} equations over loop lengths picked at grading time. Is a "
                          "Python loop still unrolling? Use lax.scan (or lax.fori_loop) over the steps")


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


class Program:
    """What the instrument asks while JAX traces it: its size. Counts the traces on this side."""

    def __init__(self, steps: int, salt: float):
        self.steps, self.salt = int(steps), float(salt)
        self.traces = 0

    def trace(self):
        self.traces += 1
        return self.steps, self.salt


@dataclass
class Calibration:
    steps: int
    compile_seconds: float         # the fastest fresh compilation (lowering left out) of the instrument
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
            lowered = jax.jit(fn).lower(*args)
            start = time.perf_counter()
            compiled = lowered.compile()
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
    compile_work: float     # calibrated seconds of its compilation


def run_instrument(measure, work_seconds: float, warm_calls: int, rng=None, exact_count: bool = True) -> MeasureRun:
    """Run `measure(instrument, *args, warm_calls=N)` in the student's kernel; judge nothing yet."""
    rng = rng if rng is not None else np.random.default_rng()
    calibration = calibrate()
    program = Program(calibration.steps, float(rng.uniform(0.01, 0.99)))
    args = _instrument_args(rng, calibration.iterations(work_seconds))
    value = remote.probe("loops.run_measure", measure, "instrument", args, warm_calls, program)
    result = _result(value, warm_calls if exact_count else None)
    if not result["run_seconds"]:
        raise CheckFailed("measure returned no run times")
    if program.traces <= 0:
        raise CheckFailed("measure never traced fn: it must compile and run the function it is given")
    return MeasureRun(result, program.traces, work_seconds, calibration.compile_seconds)


def cache_hit(run: MeasureRun) -> bool:
    """The compile span is far shorter than compiling the program takes: nothing was compiled."""
    return run.result["compile_seconds"] < COMPILE_FLOOR * run.compile_work


def run_inside_compile(run: MeasureRun) -> bool:
    """The compile span is as long as a run of the program. A run is as long as the student's own
    synchronized run samples show, and at least its calibrated work: measured in the same process
    close in time, a busy machine lengthens both alike."""
    run_length = max(statistics.median(run.result["run_seconds"]), run.work)
    return run.result["compile_seconds"] >= RUN_IN_COMPILE * run_length


CACHE_HIT = ("compile_seconds is far shorter than compiling this function takes: the program was already "
             "compiled (a cache hit). Time jax.jit(fn).lower(*args).compile() before anything else runs fn")
RUN_INSIDE_COMPILE = ("compile_seconds holds a run of the program: time jax.jit(fn).lower(*args).compile() "
                      "alone, not a call of the function")


def synchronization_problems(run: MeasureRun) -> list[str]:
    """Each run sample is a call of the compiled program (fn's Python code runs only while JAX
    traces it, a few times at most, never once per run) and lasts until its result is ready."""
    runs = len(run.result["run_seconds"])
    if run.traces > runs:
        return [f"fn's Python code ran {run.traces} times for {runs} run times: time calls of the compiled "
                "program, not calls of fn itself"]
    late = [index + 1 for index, sample in enumerate(run.result["run_seconds"])
            if sample < SYNC_FRACTION * run.work]
    if late:
        return [f"the clock was read before the result of run(s) {late} was ready: wait for the result "
                "(jax.block_until_ready) before reading the clock"]
    return []


def check_measure_compile_apart(measure, warm_calls: int = 2, rng=None) -> None:
    """The compile span holds a compilation (not a cache hit) and no run, judged as the module's
    docstring says: a cache hit in either of two runs, a run inside only when two runs agree."""
    global _calibration

    def run(work_seconds):
        return run_instrument(measure, work_seconds, warm_calls, rng)

    full = run(COMPILE_WORK_FACTOR * calibrate().compile_seconds)
    brief = run(0.0)  # one loop iteration per call: a second compile span, at little cost
    if cache_hit(full) or cache_hit(brief):
        raise CheckFailed(CACHE_HIT)
    if run_inside_compile(full):
        # A compile slowed by another process can look as long as a run: measure the machine
        # again and count the verdict only when the second run shows a run inside too.
        _calibration = None
        full = run(COMPILE_WORK_FACTOR * calibrate().compile_seconds)
        if cache_hit(full):
            raise CheckFailed(CACHE_HIT)
        if run_inside_compile(full):
            raise CheckFailed(RUN_INSIDE_COMPILE)


def check_measure_synchronized(measure, warm_calls: int = 5, rng=None) -> None:
    run = run_instrument(measure, SYNC_WORK_SECONDS, warm_calls, rng, exact_count=False)  # counted in the compile cell
    problems = synchronization_problems(run)
    if problems:
        raise CheckFailed(problems[0])
