"""The checks of the performance-audit project, in one place.

Two things run them: the project's command line,
`projects/performance-audit/tests/check.py --implementation NAME --stage N`, and the hidden
tests of the notebook `source/performance-audit/performance-audit.ipynb`. Both hand over the
same four pieces of a student's work, gathered in an `Implementation`:

  workload(a, b)                          jitted tanh(a @ b); its Python body adds one to a
                                          counter, so the counter counts traces
  trace_count()                           that counter
  time_first_and_steady(fn, *args, steady_calls=7)
                                          (first_call_seconds, [steady seconds, ...]), every
                                          measurement ending after its result is ready
  build_report(measurements)              the JSON-ready report: the measurements, their
                                          median, backend and versions, "memory_measured": False

The stages:

  1  the identity matrix (and fresh random matrices) against NumPy; the timer's method on a
     scripted clock (`checks.timing`): first call apart, every measurement synchronized; then
     one real synchronized measurement, reported and never judged
  2  the counter after calls at 16x16 and 32x32 reads two; repeating both leaves it at two
  3  report.json and workload.jaxpr.txt written to an evidence directory and read back
  4  1, 2 and 3 in one run

Every failure is an `AuditFailure` (an AssertionError) whose message says what to change.
No check depends on how fast the machine is. Imports: jax, numpy and the standard library only,
so check.py can load this file from the repository without the course's package installed.
"""
from __future__ import annotations

import json
import math
import operator
import os
import platform
import re
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .timing import COMPILE_SECONDS, DISPATCH_SECONDS, WORK_SECONDS, close, run_timer

PROJECT = "performance-audit"
DTYPE = np.float32
IDENTITY_SIZE = 64                      # stage 1 checks and times workload(I, I) at this size
TRACED_SHAPES = ((16, 16), (32, 32))    # stage 2 calls workload at these shapes
STEADY_CALLS = 7
TANH_ONE = float(np.tanh(np.float32(1.0)))  # 0.761594...
REPORT_NAME = "report.json"
JAXPR_NAME = "workload.jaxpr.txt"
WORKLOAD = "tanh(a @ b), compiled with jax.jit"
BOUNDARY = "inputs already on the device; each call until its result is ready"
TIMER_KEYWORD = "steady_calls"


class AuditFailure(AssertionError):
    """A check that did not pass; the message says what to change."""


@dataclass
class Implementation:
    """The four pieces of one student's work that the checks call."""
    workload: Callable
    trace_count: Callable[[], int]
    time_first_and_steady: Callable
    build_report: Callable[[dict], dict]
    name: str = "notebook"

    PARTS = ("workload", "trace_count", "time_first_and_steady", "build_report")

    @classmethod
    def from_namespace(cls, namespace, name: str) -> "Implementation":
        """From a module or a notebook's globals(); a missing piece is an AuditFailure."""
        get = namespace.get if isinstance(namespace, dict) else (lambda key: getattr(namespace, key, None))
        missing = [part for part in cls.PARTS if not callable(get(part))]
        if missing:
            raise AuditFailure(f"{name} does not define {', '.join(missing)} "
                               f"(expected functions: {', '.join(cls.PARTS)})")
        return cls(*(get(part) for part in cls.PARTS), name=name)


# ---------------------------------------------------------------------------------------------
# Calling the student's code


def one_line(exc: BaseException) -> str:
    """An exception's message on one line, at most 300 characters."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text if len(text) <= 300 else text[:297] + "..."


def _call(what: str, fn, *args, **kwargs):
    """Call student code; turn whatever it raises into one AuditFailure naming `what`."""
    try:
        return fn(*args, **kwargs)
    except AuditFailure:
        raise
    except NotImplementedError as exc:
        said = one_line(exc)
        raise AuditFailure(f"{what} raised NotImplementedError, it is not written yet"
                           + (f": {said}" if said else "")) from None
    except Exception as exc:  # a student's bug, reported rather than a traceback
        raise AuditFailure(f"{what} raised {type(exc).__name__}: {one_line(exc)}") from None


def _ready(what: str, value):
    return _call(what, jax.block_until_ready, value)


def _identity() -> jax.Array:
    return jnp.eye(IDENTITY_SIZE, dtype=DTYPE)


def _random(rng, shape, scale=1.0) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=DTYPE) * DTYPE(scale)).astype(DTYPE)


def _shape_text(shape) -> str:
    return "x".join(str(n) for n in shape)


# ---------------------------------------------------------------------------------------------
# Stage 1: the result, and the timer's method


def check_workload(workload) -> dict:
    """workload is jitted and computes tanh(a @ b): on the identity, then on fresh random inputs."""
    if not callable(getattr(workload, "lower", None)):
        raise AuditFailure("workload must be compiled with jax.jit (decorate it with @jax.jit)")
    eye = _identity()
    out = _ready("workload(I, I)", _call("workload(I, I)", workload, eye, eye))
    if getattr(out, "shape", None) != (IDENTITY_SIZE, IDENTITY_SIZE) or getattr(out, "dtype", None) != DTYPE:
        raise AuditFailure(f"workload(I, I) should be a {IDENTITY_SIZE}x{IDENTITY_SIZE} float32 array, got "
                           f"shape {getattr(out, 'shape', None)} and dtype {getattr(out, 'dtype', None)}")
    got = np.asarray(out)
    expected = np.tanh(np.eye(IDENTITY_SIZE, dtype=DTYPE) @ np.eye(IDENTITY_SIZE, dtype=DTYPE))
    diagonal = np.diag(got)
    off_diagonal = float(np.max(np.abs(got - np.diag(diagonal))))
    if not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
        raise AuditFailure(
            f"workload(I, I) differs from NumPy's tanh(I @ I): its diagonal runs from "
            f"{diagonal.min():.6f} to {diagonal.max():.6f} (expected {TANH_ONE:.6f}) and its largest "
            f"off-diagonal entry is {off_diagonal:.3g} (expected 0); workload should return tanh(a @ b)")
    rng = np.random.default_rng()
    for m, k, n in ((7, 5, 3), (33, 17, 9), (1, 16, 16)):
        a, b = _random(rng, (m, k)), _random(rng, (k, n), 1 / math.sqrt(k))
        what = f"workload on random {_shape_text(a.shape)} and {_shape_text(b.shape)} inputs"
        result = np.asarray(_ready(what, _call(what, workload, jnp.asarray(a), jnp.asarray(b))))
        reference = np.tanh(a @ b)
        if result.shape != reference.shape or not np.allclose(result, reference, rtol=1e-5, atol=1e-5):
            raise AuditFailure(f"{what} differs from NumPy's tanh(a @ b) (shape {result.shape}, "
                               f"expected {reference.shape}); it must work for any compatible shapes")
    return {"diagonal": float(diagonal.mean()), "off_diagonal": off_diagonal}


def check_first_call_apart(timer) -> None:
    """On a scripted device: one first call that pays compilation, then exactly N steady calls."""
    for steady_calls in (4, 9):
        run = _call(f"time_first_and_steady(fn, *args, {TIMER_KEYWORD}={steady_calls})",
                    run_timer, timer, steady_calls, keyword=TIMER_KEYWORD)
        if run.calls != steady_calls + 1:
            raise AuditFailure(
                f"with {TIMER_KEYWORD}={steady_calls} the timer called fn {run.calls} times; expected 1 first "
                f"call and {steady_calls} steady calls ({steady_calls + 1}), with no untimed warm-up call")
        if len(run.warm) != steady_calls:
            raise AuditFailure(f"with {TIMER_KEYWORD}={steady_calls} the timer returned {len(run.warm)} "
                               f"steady samples; expected {steady_calls}")
        if not run.first >= COMPILE_SECONDS:
            raise AuditFailure("the first-call time must measure the very first call, the one that traces "
                               "and compiles; time it on its own before the steady calls")
        if not all(sample < COMPILE_SECONDS for sample in run.warm):
            raise AuditFailure("a steady sample includes the first call; keep the first call out of the "
                               "steady samples")


def check_synchronized(timer) -> None:
    """On a scripted device: every clock read that ends a measurement comes after the result is ready."""
    run = _call(f"time_first_and_steady(fn, *args, {TIMER_KEYWORD}=5)", run_timer, timer, 5,
                keyword=TIMER_KEYWORD)
    late = run.unsynchronized_measurements()
    if late:
        raise AuditFailure(
            f"the clock was read before the result of call(s) {late} was ready, so those timings measure "
            f"dispatch, not the computation; wait with jax.block_until_ready(result) before reading the clock")
    if not (len(run.warm) == 5 and all(close(s, DISPATCH_SECONDS + WORK_SECONDS) for s in run.warm)):
        raise AuditFailure("each steady sample should span one call until its result is ready, no more "
                           f"and no less (scripted durations: {run.warm})")


def _timings(value, steady_calls: int) -> tuple[float, list[float]]:
    """The timer's real output, checked for form only: no timing decides pass or fail."""
    try:
        first, steady = value
        first, steady = float(first), [float(s) for s in steady]
    except (TypeError, ValueError):
        raise AuditFailure("time_first_and_steady should return (first_call_seconds, [steady seconds, ...]), "
                           f"got {type(value).__name__}") from None
    if len(steady) != steady_calls:
        raise AuditFailure(f"time_first_and_steady returned {len(steady)} steady samples for "
                           f"{TIMER_KEYWORD}={steady_calls}")
    if not all(math.isfinite(s) and s >= 0 for s in (first, *steady)):
        raise AuditFailure("timings should be finite, non-negative seconds (end clock minus start clock)")
    return first, steady


def measure_timing(workload, timer) -> dict:
    """A real synchronized measurement of workload(I, I): the first call after the caches are cleared."""
    eye = _identity()
    jax.block_until_ready(eye)
    jax.clear_caches()  # forget compiled programs: the first call traces and compiles again
    value = _call("time_first_and_steady(workload, I, I)", timer, workload, eye, eye,
                  **{TIMER_KEYWORD: STEADY_CALLS})
    first, steady = _timings(value, STEADY_CALLS)
    return {"workload": WORKLOAD, "dtype": np.dtype(DTYPE).name,
            "timed_shapes": [[IDENTITY_SIZE, IDENTITY_SIZE], [IDENTITY_SIZE, IDENTITY_SIZE]],
            "boundary": BOUNDARY, "first_call_seconds": first, "steady_seconds": steady}


def stage1(impl: Implementation) -> str:
    found = check_workload(impl.workload)
    check_first_call_apart(impl.time_first_and_steady)
    check_synchronized(impl.time_first_and_steady)
    timing = measure_timing(impl.workload, impl.time_first_and_steady)
    return (f"tanh(I @ I) matches NumPy (diagonal {found['diagonal']:.6f}, off-diagonal "
            f"{found['off_diagonal']:.1g}); the timer keeps the first call apart and synchronizes every "
            f"measurement; first call {timing['first_call_seconds']:.3g} s, steady median "
            f"{statistics.median(timing['steady_seconds']):.3g} s over {STEADY_CALLS} calls "
            f"(this machine, this run)")


# ---------------------------------------------------------------------------------------------
# Stage 2: traces, counted by the student's counter


def _count(trace_count) -> int:
    value = _call("trace_count()", trace_count)
    try:
        return operator.index(value)
    except TypeError:
        raise AuditFailure(f"trace_count() should return an int, got {type(value).__name__}") from None


def count_traces(workload, trace_count) -> dict:
    """Calls at each traced shape, then again: the counter's increase after each round.

    The caches are cleared first, so the count does not depend on what ran before. Each
    result is ready before the counter is read, and no JAXPR is captured in between.
    """
    rng = np.random.default_rng()
    jax.clear_caches()
    before = _count(trace_count)
    rounds = []
    for _ in range(2):
        for shape in TRACED_SHAPES:
            a, b = jnp.asarray(_random(rng, shape)), jnp.asarray(_random(rng, shape, 1 / math.sqrt(shape[0])))
            what = f"workload at {_shape_text(shape)}"
            _ready(what, _call(what, workload, a, b))
        rounds.append(_count(trace_count) - before)
    return {"traced_shapes": [list(s) for s in TRACED_SHAPES], "trace_count": rounds[0],
            "after_repeat": rounds[1]}


def check_trace_count(workload, trace_count) -> dict:
    """Stage 2: two traces for two new shapes, none more for the same shapes again."""
    counted = count_traces(workload, trace_count)
    first, repeat = counted["trace_count"], counted["after_repeat"]
    shapes = " and ".join(_shape_text(s) for s in TRACED_SHAPES)
    if first == 0:
        raise AuditFailure(f"the trace counter did not move when workload ran at {shapes}: add 1 to it in "
                           "workload's Python body, which runs each time JAX traces the function")
    if repeat != first:
        raise AuditFailure(
            f"the counter read {first} after calls at {shapes}, but calling again at the same shapes moved "
            f"it to {repeat}: it counts calls, not traces. Count with a plain Python statement in the "
            "jitted function's body, which runs only when JAX traces (not in a callback, not around the call)")
    if first != len(TRACED_SHAPES):
        raise AuditFailure(f"expected {len(TRACED_SHAPES)} traces after calls at {shapes} (one per new "
                           f"shape), the counter read {first}")
    return counted


def stage2(impl: Implementation) -> str:
    counted = check_trace_count(impl.workload, impl.trace_count)
    return (f"{counted['trace_count']} traces after calls at "
            f"{' and '.join(_shape_text(s) for s in TRACED_SHAPES)}, read before any JAXPR capture; "
            f"calling again at both shapes traced nothing new")


# ---------------------------------------------------------------------------------------------
# Stage 3: the evidence


def _primitives(jaxpr) -> set[str]:
    """Every primitive name in a jaxpr and the jaxprs nested in its equations' parameters."""
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    names |= _primitives(inner)
    return names


def capture_jaxpr(workload) -> str:
    """The symbolic program of workload at the timed shapes. Call it after reading the counter:
    make_jaxpr may trace the Python function again."""
    eye = _identity()
    closed = _call("jax.make_jaxpr(workload)(I, I)", lambda: jax.make_jaxpr(workload)(eye, eye))
    missing = {"dot_general", "tanh"} - _primitives(closed.jaxpr)
    if missing:
        raise AuditFailure(f"the JAXPR of workload has no {' or '.join(sorted(missing))}: it should be the "
                           "matrix product followed by tanh")
    try:
        return closed.pretty_print(use_color=False)
    except TypeError:  # a JAX whose pretty_print takes no use_color: drop the terminal colours
        return re.sub(r"\x1b\[[0-9;]*m", "", str(closed))


def environment() -> dict:
    """What the report must name: where it ran, with which versions."""
    import jaxlib
    return {"backend": jax.default_backend(), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


def check_report(report, measurements: dict) -> dict:
    """The student's report records the measurements unchanged, their median, the environment,
    and says explicitly that memory was not measured. Returns it as JSON would read it back."""
    if not isinstance(report, dict):
        raise AuditFailure(f"build_report should return a dict, got {type(report).__name__}")
    try:
        loaded = json.loads(json.dumps(report, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise AuditFailure(f"the report is not plain JSON ({one_line(exc)}); convert NumPy and JAX values "
                           "with float(), int() or .tolist()") from None
    if "memory_measured" not in loaded or loaded["memory_measured"] is not False:
        raise AuditFailure('the report must say "memory_measured": false explicitly: this audit times calls '
                           "and counts traces, it does not measure memory"
                           + ("" if "memory_measured" not in loaded
                              else f" (it says {json.dumps(loaded['memory_measured'])})"))
    expected = json.loads(json.dumps(measurements))
    for key, value in expected.items():
        if key not in loaded:
            raise AuditFailure(f"the report leaves out the measurement {key!r}; keep every measurement")
        if loaded[key] != value:
            raise AuditFailure(f"the report changes the measurement {key!r} (recorded {loaded[key]!r}, "
                               f"measured {value!r}); record measurements as they are")
    median = statistics.median(measurements["steady_seconds"])
    recorded = loaded.get("steady_median_seconds")
    if not isinstance(recorded, (int, float)) or not math.isclose(recorded, median, rel_tol=1e-12, abs_tol=0):
        raise AuditFailure(f"steady_median_seconds should be the median of steady_seconds ({median!r}), "
                           f"the report says {recorded!r}")
    for key, value in environment().items():
        if loaded.get(key) != value:
            raise AuditFailure(f"the report should record {key!r} as {value!r} (where and with what it ran), "
                               f"it says {loaded.get(key)!r}")
    return loaded


def _write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def prepare_evidence_dir(directory) -> Path:
    """Create the evidence directory if it is missing and prove it writable, or say why not."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except FileExistsError:
        raise AuditFailure(f"cannot write evidence to {directory}: a file is in the way, not a directory") from None
    except OSError as exc:
        raise AuditFailure(f"cannot write evidence to {directory}: {exc.strerror or exc}") from None
    return directory


def write_evidence(impl: Implementation, directory) -> dict:
    """Measure, build the report, write report.json and workload.jaxpr.txt, and read them back."""
    directory = prepare_evidence_dir(directory)
    measurements = measure_timing(impl.workload, impl.time_first_and_steady)
    counted = count_traces(impl.workload, impl.trace_count)  # read before the JAXPR capture below
    measurements.update(traced_shapes=counted["traced_shapes"], trace_count=counted["trace_count"],
                        jaxpr_file=JAXPR_NAME)
    jaxpr_text = capture_jaxpr(impl.workload)
    report = check_report(_call("build_report(measurements)", impl.build_report, dict(measurements)),
                          measurements)
    report_path, jaxpr_path = directory / REPORT_NAME, directory / JAXPR_NAME
    try:
        _write(report_path, json.dumps(report, indent=2) + "\n")
        _write(jaxpr_path, jaxpr_text + "\n")
        on_disk = json.loads(report_path.read_text(encoding="utf-8"))
        jaxpr_on_disk = jaxpr_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuditFailure(f"cannot write evidence to {directory}: {exc.strerror or exc}") from None
    if on_disk != report or jaxpr_on_disk.strip() != jaxpr_text.strip():
        raise AuditFailure(f"the evidence read back from {directory} differs from what was written")
    return {"report": report, "report_path": report_path, "jaxpr_path": jaxpr_path}


def stage3(impl: Implementation, directory) -> str:
    written = write_evidence(impl, directory)
    report = written["report"]
    return (f"wrote {_display(written['report_path'])} (memory_measured: false, {report['trace_count']} "
            f"traces, first call {report['first_call_seconds']:.3g} s, steady median "
            f"{report['steady_median_seconds']:.3g} s, {report['backend']}, jax {report['jax']}) and "
            f"{_display(written['jaxpr_path'])}")


def _display(path: Path) -> str:
    """A path as short as it can be said: relative to the working directory when it is inside."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# Stage 4, and the lines a stage prints


def pass_line(stage: int, detail: str) -> str:
    return f"PASS {PROJECT} stage {stage}: {detail}"


def fail_line(stage: int, reason) -> str:
    return f"FAIL {PROJECT} stage {stage}: {reason}"


def stage4(impl: Implementation, directory, emit: Callable[[str], None] | None = None) -> str:
    """Stages 1, 2 and 3 in one run; each one's line goes to `emit` as it finishes."""
    failed = []
    for stage, run in ((1, lambda: stage1(impl)), (2, lambda: stage2(impl)), (3, lambda: stage3(impl, directory))):
        try:
            detail = run()
        except AuditFailure as exc:
            failed.append(f"stage {stage}: {exc}")
            if emit:
                emit(fail_line(stage, exc))
        else:
            if emit:
                emit(pass_line(stage, detail))
    if failed:
        raise AuditFailure(f"{len(failed)} of 3 stages did not pass: " + "; ".join(failed))
    return "stages 1, 2 and 3 pass together in one run"


def run_stage(stage: int, impl: Implementation, directory, emit: Callable[[str], None] = print) -> bool:
    """Run one stage and emit its PASS or FAIL line (stage 4: one line per stage, then its own)."""
    try:
        if stage == 1:
            detail = stage1(impl)
        elif stage == 2:
            detail = stage2(impl)
        elif stage == 3:
            detail = stage3(impl, directory)
        elif stage == 4:
            try:
                detail = stage4(impl, directory, emit)
            except AuditFailure as exc:
                raise AuditFailure(str(exc).split(":", 1)[0] + " (see above)") from None
        else:
            raise AuditFailure(f"there is no stage {stage}: choose 1, 2, 3 or 4")
    except AuditFailure as exc:
        emit(fail_line(stage, exc))
        return False
    emit(pass_line(stage, detail))
    return True
