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

Where they run. On the command line the student's module and these checks share one process,
and `remote.probe` runs its probe (`perfcourse.kernel.probes.audit`) in that process. In the
notebook these checks run in the trusted kernel: the four pieces are `remote.Remote` proxies of
the student's functions, a call through them sends values and gets values back, and whatever
needs the student's process (JAX's caches, the trace counter, a JAXPR, the evidence directory)
is done there by a probe, for inputs picked here, and returns plain data judged here. No check
reads a clock to decide anything, so no check depends on how fast the machine is.

The stages, and what a forger would have to produce to pass each without doing the work:

  1  `check_workload`: workload is jitted (it has `.lower`), and its results, which come back
     as arrays (exact NumPy or JAX arrays only, copied), match NumPy's tanh(a @ b) on the
     identity (exact at any matrix-product precision: only tanh's last digits may differ) and on
     random inputs of shapes picked here at grading time, within the tolerance of the
     matrix-product precision this process measures (`checks.numerics`: float32 on the CPU,
     bfloat16 passes by default on a TPU). Forging it means
     returning tanh(a @ b) for inputs it cannot know in advance: computing it.
     `check_first_call_apart` / `check_synchronized` (`checks.timing`, keyword steady_calls):
     the timer is handed a real jitted function whose work per call is picked here and whose
     calls are counted here; see `checks.timing` for what forging them takes (in practice,
     running every call and waiting for it). Then one real measurement (`measure_timing`),
     checked for form and reported, never judged.
  2  `check_trace_count`: a probe clears JAX's caches in the student's process and calls
     workload at shapes picked here at random (a few new shapes, each called again, in a
     shuffled order, then `jax.clear_caches()` and a shape seen before, twice), reading
     trace_count() after every step. Expected: +1 for a shape or a cleared cache JAX has no
     trace for, 0 for a repeat. A call counter moves on repeats; a counter of new shapes stays
     put after the clear. Forging the readings means knowing, call by call, when JAX traces
     workload for shapes and a protocol it cannot see in advance: counting traces.
  3  `write_evidence`: probes time the workload, count traces at the lesson's shapes (16x16,
     32x32, then both again) and capture the JAXPR in the student's process; the student's
     build_report is called with those measurements and its report (which comes back as a
     value) is judged here: plain JSON, every measurement unchanged, their median, this
     machine's backend and versions, "memory_measured": false. Only a report that passes is
     written, as report.json beside workload.jaxpr.txt, by a probe in the student's process
     (into the evidence directory, or a temporary one the probe makes and removes), which reads
     the files back and returns their text; the text is parsed and judged again here. Forging
     it means returning the text this side wrote, which is what writing and reading it does.
  4  1, 2 and 3 in one run

Every failure is an `AuditFailure` (an AssertionError) whose message says what to change, and
never names the inputs picked at grading time. Imports: jax, numpy, the standard library and
this package's channel code only, so check.py can load this file from the repository without the
course's package installed.

Limit (README, "Known limits"): a probe replaced in the student's own kernel is handed the inputs
picked here and can answer the trace-count cell with data computed from them, without running the
student's code; the grader flags code that names the grading package.
"""
from __future__ import annotations

import json
import math
import operator
import platform
import random
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import CheckFailed, numerics, remote, timing, trusted

PROJECT = "performance-audit"
DTYPE = np.float32
IDENTITY_SIZE = 64                      # stage 1 checks and times workload(I, I) at this size
TRACED_SHAPES = ((16, 16), (32, 32))    # the lesson's counting step (and the report's trace_count)
STEADY_CALLS = 7
TANH_ONE = float(np.tanh(np.float32(1.0)))  # 0.761594...
REPORT_NAME = "report.json"
JAXPR_NAME = "workload.jaxpr.txt"
WORKLOAD = "tanh(a @ b), compiled with jax.jit"
BOUNDARY = "inputs already on the device; each call until its result is ready"
TIMER_KEYWORD = "steady_calls"
CLEAR = "clear"                         # a step of the trace protocol: jax.clear_caches()
# Square shapes the lesson's own cells call workload at: random shapes avoid them, so a hidden
# check never traces a shape that a later public check counts on being new.
LESSON_SQUARES = frozenset({16, 32, IDENTITY_SIZE})


class AuditFailure(CheckFailed):
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
# Calling the student's code, and reading what comes back


def one_line(exc) -> str:
    """An exception's (or a message's) text on one line, at most 300 characters."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text if len(text) <= 300 else text[:297] + "..."


def _raised(what: str, kind: str, message: str) -> AuditFailure:
    said = one_line(message)
    if kind == "NotImplementedError":
        return AuditFailure(f"{what} raised NotImplementedError, it is not written yet" + (f": {said}" if said else ""))
    return AuditFailure(f"{what} raised {kind}: {said}")


def _call(what: str, fn, *args, **kwargs):
    """Call student code (or a probe); turn whatever it raises into one AuditFailure naming `what`."""
    try:
        return fn(*args, **kwargs)
    except AuditFailure:
        raise
    except Exception as exc:  # a student's bug, reported rather than a traceback
        raise _raised(what, type(exc).__name__, str(exc)) from None


def _probe(what: str, name: str, *args, **kwargs) -> dict:
    """A probe's answer, a dict; the student's failure it reports becomes an AuditFailure."""
    answer = _call(what, remote.probe, name, *args, **kwargs)
    if not isinstance(answer, dict):
        raise AuditFailure(f"{what}: the course's probe in your kernel answered {type(answer).__name__}, "
                           "not its report (was perfcourse.kernel.probes replaced?)")
    return answer


def _error(answer: dict):
    """The (during, type, message) of a failure a probe reported, or None."""
    error = answer.get("error")
    if error is None:
        return None
    if not isinstance(error, dict):
        return ("?", "Error", "")
    return error.get("during"), str(error.get("type", "Error"))[:100], str(error.get("message", ""))


def _integer(value, what: str) -> int:
    """A plain int from a value that crossed as data (an int or a NumPy integer, never a bool)."""
    if type(value) is int or isinstance(type(value), type) and issubclass(type(value), np.integer):
        return operator.index(value)
    name = "an object" if type(value) is remote.Remote else type(value).__name__
    raise AuditFailure(f"{what} should return an int, got {name}")


def _identity() -> jax.Array:
    return jnp.eye(IDENTITY_SIZE, dtype=DTYPE)


def _random(rng, shape, scale=1.0) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=DTYPE) * DTYPE(scale)).astype(DTYPE)


def _shape_text(shape) -> str:
    return "x".join(str(n) for n in shape)


def _fresh_triples(rng, count: int) -> list[tuple[int, int, int]]:
    """`count` distinct (m, k, n): a is m x k, b is k x n; never one of the lesson's square shapes."""
    triples: list[tuple[int, int, int]] = []
    while len(triples) < count:
        m, k, n = (int(v) for v in rng.integers(1, 48, size=3))
        if k < 2 or (m == k == n and m in LESSON_SQUARES) or (m, k, n) in triples:
            continue
        triples.append((m, k, n))
    return triples


def _array(value, what: str) -> np.ndarray:
    """A copy of a result that must be an array (an exact NumPy or JAX array, checked here)."""
    try:
        return trusted.array(value)
    except AssertionError as exc:
        raise AuditFailure(f"{what} should return an array: {one_line(exc)}") from None
    except Exception as exc:
        raise AuditFailure(f"{what} returned something that is not an array ({type(exc).__name__})") from None


# ---------------------------------------------------------------------------------------------
# Stage 1: the result, and the timer's method


def check_workload(workload) -> dict:
    """workload is jitted and computes tanh(a @ b): on the identity, then on fresh random inputs."""
    if not callable(getattr(workload, "lower", None)):
        raise AuditFailure("workload must be compiled with jax.jit (decorate it with @jax.jit)")
    eye = _identity()
    got = _array(_call("workload(I, I)", workload, eye, eye), "workload(I, I)")
    if got.shape != (IDENTITY_SIZE, IDENTITY_SIZE) or got.dtype != DTYPE:
        raise AuditFailure(f"workload(I, I) should be a {IDENTITY_SIZE}x{IDENTITY_SIZE} float32 array, got "
                           f"shape {got.shape} and dtype {got.dtype}")
    expected = np.tanh(np.eye(IDENTITY_SIZE, dtype=DTYPE) @ np.eye(IDENTITY_SIZE, dtype=DTYPE))
    diagonal = np.diag(got)
    off_diagonal = float(np.max(np.abs(got - np.diag(diagonal))))
    # I @ I is exact at every matrix-product precision (0 and 1 survive rounding to bfloat16), so
    # only tanh(1)'s last float32 digits may differ, on any backend.
    if not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
        raise AuditFailure(
            f"workload(I, I) differs from NumPy's tanh(I @ I): its diagonal runs from "
            f"{diagonal.min():.6f} to {diagonal.max():.6f} (expected {TANH_ONE:.6f}) and its largest "
            f"off-diagonal entry is {off_diagonal:.3g} (expected 0); workload should return tanh(a @ b)")
    rng = np.random.default_rng()
    precision = numerics.matmul_precision()
    tolerance = numerics.tolerance(precision)
    for m, k, n in _fresh_triples(rng, 3):
        a, b = _random(rng, (m, k)), _random(rng, (k, n), 1 / math.sqrt(k))
        what = "workload on random inputs"
        result = _array(_call(what, workload, jnp.asarray(a), jnp.asarray(b)), what)
        reference = np.tanh(a.astype(np.float64) @ b.astype(np.float64))
        if result.shape != reference.shape:
            raise AuditFailure(f"{what} returned an array of {result.ndim} dimension(s) and the wrong shape; "
                               "for a of shape (m, k) and b of shape (k, n) it should be (m, n)")
        if (result.dtype != DTYPE or not np.all(np.isfinite(result))
                or not np.allclose(result, reference, **tolerance)):
            raise AuditFailure(f"{what} differs from NumPy's tanh(a @ b) (largest difference "
                               f"{float(np.max(np.abs(result.astype(np.float64) - reference))):.3g}, more than "
                               f"rtol = atol = {tolerance['rtol']:g}, the tolerance of "
                               f"{numerics.DESCRIPTIONS[precision]}): it must return tanh(a @ b) for any "
                               "compatible shapes, not only the identity")
    return {"diagonal": float(diagonal.mean()), "off_diagonal": off_diagonal}


def _steady(problem: str) -> str:
    """checks.timing's wording, in this lesson's: its warm calls are our steady calls."""
    return problem.replace("warm sample", "steady sample").replace("warm call", "steady call")


def _run_timer(timer, steady_calls: int) -> timing.TimerRun:
    what = f"time_first_and_steady(fn, *args, {TIMER_KEYWORD}={steady_calls})"
    try:
        return _call(what, timing.run_timer, timer, steady_calls, keyword=TIMER_KEYWORD)
    except AuditFailure:
        raise
    except AssertionError as exc:  # checks.timing's own verdict on the form of what came back
        raise AuditFailure(f"{what}: {one_line(exc)}") from None


def check_first_call_apart(timer, steady_counts=(4, 9)) -> None:
    """One first call timed on its own (it does far more work), then exactly N steady calls."""
    for steady_calls in steady_counts:
        problems = timing.confirmed_problems(
            lambda run: timing.first_call_problems(run, steady_calls, TIMER_KEYWORD),
            lambda: _run_timer(timer, steady_calls))
        if problems:
            raise AuditFailure(_steady(problems[0]))


def check_synchronized(timer, steady_calls: int = 5) -> None:
    """Every measurement lasts until its own call's result is ready (work picked per call here)."""
    problems = timing.confirmed_problems(timing.synchronization_problems, lambda: _run_timer(timer, steady_calls))
    if problems:
        raise AuditFailure(_steady(problems[0]))


def _timings(value, steady_calls: int) -> tuple[float, list[float]]:
    """The timer's real output, checked for form only: no timing decides pass or fail."""
    try:
        first, steady = value
        first, steady = float(first), [float(s) for s in steady]
    except Exception:
        raise AuditFailure("time_first_and_steady should return (first_call_seconds, [steady seconds, ...]), "
                           f"got {type(value).__name__}") from None
    if len(steady) != steady_calls:
        raise AuditFailure(f"time_first_and_steady returned {len(steady)} steady samples for "
                           f"{TIMER_KEYWORD}={steady_calls}")
    if not all(math.isfinite(s) and s >= 0 for s in (first, *steady)):
        raise AuditFailure("timings should be finite, non-negative seconds (end clock minus start clock)")
    return first, steady


def measure_timing(workload, timer) -> dict:
    """A real synchronized measurement of workload(I, I) in the student's process: the first call
    after the caches are cleared, then STEADY_CALLS steady calls. Reported, never judged."""
    what = "time_first_and_steady(workload, I, I)"
    answer = _probe(what, "audit.measure_timing", workload, timer, IDENTITY_SIZE, TIMER_KEYWORD, STEADY_CALLS)
    error = _error(answer)
    if error:
        raise _raised(what, error[1], error[2])
    first, steady = _timings(answer.get("value"), STEADY_CALLS)
    return {"workload": WORKLOAD, "dtype": np.dtype(DTYPE).name,
            "timed_shapes": [[IDENTITY_SIZE, IDENTITY_SIZE], [IDENTITY_SIZE, IDENTITY_SIZE]],
            "boundary": BOUNDARY, "first_call_seconds": first, "steady_seconds": steady}


def stage1(impl: Implementation) -> str:
    found = check_workload(impl.workload)
    check_first_call_apart(impl.time_first_and_steady)
    check_synchronized(impl.time_first_and_steady)
    timing_run = measure_timing(impl.workload, impl.time_first_and_steady)
    return (f"tanh(I @ I) matches NumPy (diagonal {found['diagonal']:.6f}, off-diagonal "
            f"{found['off_diagonal']:.1g}), and so do random inputs; the timer keeps the first call apart and "
            f"synchronizes every measurement; first call {timing_run['first_call_seconds']:.3g} s, steady "
            f"median {statistics.median(timing_run['steady_seconds']):.3g} s over {STEADY_CALLS} calls "
            f"(this machine, this run)")


# ---------------------------------------------------------------------------------------------
# Stage 2: traces, counted by the student's counter in the student's process


def _readings(workload, trace_count, inputs, steps, describe) -> list[int]:
    """trace_count() before and after every step, run in the student's process by a probe."""
    answer = _probe("counting traces", "audit.count_traces", workload, trace_count, tuple(inputs), list(steps))
    raw = answer.get("readings")
    if not isinstance(raw, list):
        raise AuditFailure("counting traces: the course's probe in your kernel answered without readings "
                           "(was perfcourse.kernel.probes replaced?)")
    error = _error(answer)
    if error:
        during = error[0]
        what = "trace_count()" if during == "trace_count" else (
            describe(during) if type(during) is int and 0 <= during < len(steps) else "workload")
        raise _raised(what, error[1], error[2])
    readings = [_integer(value, "trace_count()") for value in raw]
    if len(readings) != len(steps) + 1:
        raise AuditFailure(f"counting traces: {len(readings)} readings for {len(steps)} steps "
                           "(was perfcourse.kernel.probes replaced?)")
    return readings


def trace_protocol(rng: random.Random | None = None, np_rng=None):
    """Inputs and steps picked at random: 2 or 3 new shapes, each called twice in a shuffled order
    (the first call at a shape always traces), then jax.clear_caches() and one of those shapes
    twice (the first traces again, the second does not)."""
    rng = rng or random.Random()
    np_rng = np_rng if np_rng is not None else np.random.default_rng()
    triples = _fresh_triples(np_rng, rng.choice((2, 3)))
    inputs = [(_random(np_rng, (m, k)), _random(np_rng, (k, n), 1 / math.sqrt(k))) for m, k, n in triples]
    calls = [i for i in range(len(inputs)) for _ in range(2)]
    rng.shuffle(calls)
    again = rng.randrange(len(inputs))
    return inputs, [*calls, CLEAR, again, again]


def expected_traces(steps) -> list[int]:
    """How many traces each step makes: one for a call JAX has no program for, none otherwise."""
    traced, expected = set(), []
    for step in steps:
        if step == CLEAR:
            traced.clear()
            expected.append(0)
        else:
            expected.append(0 if step in traced else 1)
            traced.add(step)
    return expected


def check_trace_count(workload, trace_count, rng: random.Random | None = None) -> dict:
    """Stage 2: one trace per call at a shape JAX has no program for, none for a repeat, at shapes
    and in an order picked here; the counter is driven and read in the student's process."""
    inputs, steps = trace_protocol(rng)
    readings = _readings(workload, trace_count, inputs, steps, lambda i: "workload at a new shape")
    moved = [after - before for before, after in zip(readings, readings[1:])]
    expected = expected_traces(steps)
    if not any(moved):
        raise AuditFailure("the trace counter did not move when workload ran at new shapes: add 1 to it in "
                           "workload's Python body, which runs each time JAX traces the function")
    cleared = False
    for step, got, want in zip(steps, moved, expected):
        if step == CLEAR:
            cleared = True
            if got:
                raise AuditFailure("jax.clear_caches() moved the trace counter: count traces in workload's body, "
                                   "nothing else")
        elif want == 0 and got != 0:
            raise AuditFailure(
                f"calling workload again at a shape it had already run at moved the counter by {got}: it counts "
                "calls, not traces. Count with a plain Python statement in the jitted function's body, which "
                "runs only when JAX traces (not in a callback, not around the call)")
        elif want == 1 and got != 1 and cleared:
            raise AuditFailure(
                f"after jax.clear_caches(), JAX traced workload again at a shape it had seen before, and the "
                f"counter moved by {got}, not 1: it counts new shapes, not traces. Count with a plain Python "
                "statement in the jitted function's body, which runs every time JAX traces it")
        elif want == 1 and got != 1:
            raise AuditFailure(f"a call at a new shape traces workload once, but the counter moved by {got}: "
                               "add exactly 1 per trace, in workload's body")
    return {"calls": sum(step != CLEAR for step in steps), "traces": sum(expected), "readings": readings}


def count_traces(workload, trace_count) -> dict:
    """The lesson's counting step, for the report: after jax.clear_caches(), calls at 16x16 and
    32x32, then at both again; the counter's increase after each round (not judged here)."""
    rng = np.random.default_rng()
    inputs = [(_random(rng, shape), _random(rng, shape, 1 / math.sqrt(shape[0]))) for shape in TRACED_SHAPES]
    steps = [0, 1, 0, 1]
    readings = _readings(workload, trace_count, inputs, steps,
                         lambda i: f"workload at {_shape_text(TRACED_SHAPES[steps[i]])}")
    return {"traced_shapes": [list(s) for s in TRACED_SHAPES], "trace_count": readings[2] - readings[0],
            "after_repeat": readings[4] - readings[0]}


def stage2(impl: Implementation) -> str:
    counted = check_trace_count(impl.workload, impl.trace_count)
    return ("the counter moved by one for every call JAX had no trace for (new shapes picked at random, and "
            "a known shape after jax.clear_caches()) and not at all for repeated calls")


# ---------------------------------------------------------------------------------------------
# Stage 3: the evidence


def capture_jaxpr(workload) -> str:
    """The symbolic program of workload at the timed shapes, captured in the student's process.
    Call it after reading the counter: make_jaxpr traces the Python function when JAX has no trace
    of it for these shapes and dtypes (after jax.clear_caches(), or at a shape not called yet)."""
    what = "jax.make_jaxpr(workload)(I, I)"
    answer = _probe(what, "audit.capture_jaxpr", workload, IDENTITY_SIZE)
    error = _error(answer)
    if error:
        raise _raised(what, error[1], error[2])
    text, primitives = answer.get("text"), answer.get("primitives")
    if type(text) is not str or not isinstance(primitives, list):
        raise AuditFailure(f"{what}: the course's probe in your kernel answered without a JAXPR")
    missing = sorted(name for name in ("dot_general", "tanh") if name not in primitives or name not in text)
    if missing:
        raise AuditFailure(f"the JAXPR of workload has no {' or '.join(missing)}: it should be the "
                           "matrix product followed by tanh")
    return text


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




def write_evidence(impl: Implementation, directory=None) -> dict:
    """Measure, count, capture and build the report with the student's functions in the student's
    process; judge the report here; only then write report.json and workload.jaxpr.txt there (into
    `directory`, or a temporary directory the probe makes and removes when it is None) and judge
    what is read back."""
    if directory is not None:
        directory = prepare_evidence_dir(directory)
    measurements = measure_timing(impl.workload, impl.time_first_and_steady)
    counted = count_traces(impl.workload, impl.trace_count)  # read before the JAXPR capture below
    measurements.update(traced_shapes=counted["traced_shapes"], trace_count=counted["trace_count"],
                        jaxpr_file=JAXPR_NAME)
    jaxpr_text = capture_jaxpr(impl.workload)
    report = check_report(_call("build_report(measurements)", impl.build_report, dict(measurements)),
                          measurements)
    texts = {REPORT_NAME: json.dumps(report, indent=2) + "\n", JAXPR_NAME: jaxpr_text + "\n"}
    where = "the evidence directory" if directory is None else str(directory)
    answer = _probe(f"writing evidence to {where}", "audit.write_evidence",
                    None if directory is None else str(directory), texts)
    error = _error(answer)
    if error:
        raise AuditFailure(f"cannot write evidence to {where}: {one_line(error[2]) or error[1]}")
    listing, files, written_to = answer.get("listing"), answer.get("files"), answer.get("directory")
    if not isinstance(listing, list) or not isinstance(files, dict) or type(written_to) is not str:
        raise AuditFailure(f"writing evidence to {where}: the course's probe in your kernel answered without "
                           "the files it read back (was perfcourse.kernel.probes replaced?)")
    missing = [name for name in texts if name not in listing or type(files.get(name)) is not str]
    if missing:
        raise AuditFailure(f"{', '.join(missing)} could not be read back from {where}")
    try:
        on_disk = json.loads(files[REPORT_NAME])
    except ValueError:
        raise AuditFailure(f"{REPORT_NAME} read back from {where} is not JSON") from None
    if on_disk != report or files[JAXPR_NAME].strip() != jaxpr_text.strip():
        raise AuditFailure(f"the evidence read back from {where} differs from what was written")
    check_report(on_disk, measurements)
    return {"report": on_disk, "report_path": Path(written_to) / REPORT_NAME,
            "jaxpr_path": Path(written_to) / JAXPR_NAME, "temporary": directory is None}


def stage3(impl: Implementation, directory=None) -> str:
    written = write_evidence(impl, directory)
    report = written["report"]
    files = (f"{REPORT_NAME} and {JAXPR_NAME} in a temporary directory (removed)" if written["temporary"]
             else f"{_display(written['report_path'])} and {_display(written['jaxpr_path'])}")
    return (f"wrote {files}: memory_measured: false, {report['trace_count']} traces, first call "
            f"{report['first_call_seconds']:.3g} s, steady median {report['steady_median_seconds']:.3g} s, "
            f"{report['backend']}, jax {report['jax']}")


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


def stage4(impl: Implementation, directory=None, emit: Callable[[str], None] | None = None) -> str:
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
