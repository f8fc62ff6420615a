"""The checks of the performance-audit project, in one place.

Two things run them: the project's command line,
`projects/performance-audit/tests/check.py --implementation NAME --stage N`, and the hidden
tests of the notebook `source/performance-audit/performance-audit.ipynb`. Both hand over the
same five pieces, gathered in an `Implementation`:

  workload(a, b)                          jitted tanh(a @ b); its Python body adds one to a
                                          counter, so the counter counts traces
  trace_count()                           that counter
  time_first_and_steady(fn, *args, steady_calls=7)
                                          the course's timer, given (performance-01's
                                          `time_completed`, which keeps the first call apart):
                                          (first_call_seconds, [steady seconds, ...])
  first_call_evidence(first_call_seconds, steady_seconds)
                                          what the timings show: the steady median and middle
                                          half, the first call's one-time cost and its fraction of
                                          the first call, and whether the first call lies above
                                          the steady middle half (performance-01's rule)
  build_report(measurements)              the JSON-ready report: the measurements, their
                                          median, backend and versions, "memory_measured": False

Where they run. On the command line the student's module and these checks share one process,
and `remote.probe` runs its probe (`perfcourse.kernel.probes.audit`) in that process. In the
notebook these checks run in the trusted kernel: the four pieces are `remote.Remote` proxies of
the student's functions, a call through them sends values and gets values back. The checks call
the student's functions themselves; probes do only what must happen inside the student's process
around those calls (clear JAX's caches, call workload under another matmul precision, capture a
JAXPR's text, write files), and workload's program comes here as an exported program
(`checks.programs`) that this side reads, compiles and runs. No check reads a clock to decide
anything, so no check depends on how fast the machine is.

What each grade cell's verdict rests on (*observed*: the trusted side drove it and saw it happen;
*verified*: an artifact the trusted side examined and ran itself; *evidence only*: believed),
and what a forger, who can replace the course's probes in its own kernel, would have to produce:

  test_workload (stage 1, `check_workload`): *verified*. workload is jitted (jax.jit's own type),
     and its results on the identity and on random inputs of shapes picked here at grading time,
     sent from here and returned as arrays (exact NumPy or JAX arrays only, copied), match NumPy's
     tanh(a @ b) computed here, within the tolerance of the matrix-product precision this process
     measures (`checks.numerics`: float32 on the CPU, bfloat16 passes by default on a TPU; the
     identity is exact at any precision). No probe is involved. Forging it means returning
     tanh(a @ b) for inputs it cannot know in advance: computing it.
  test_first_call_evidence (stage 1, `check_first_call_evidence`): *observed*, values only. This
     side draws timings (a first call and 5 to 11 steady calls, odd and even counts, some with a
     busy moment's outlier): a first call far above the steady calls, one above the steady middle
     half but below the slowest steady call and less than the full range above the median, one
     inside the middle half above the median, one below the median, and one exactly on the steady
     75th percentile (5 or 9 steady calls: the percentile is one of them); none other within a
     millionth of the verdict's boundary. It calls first_call_evidence on them and compares with
     its own computation (`expected_first_call`): the median and middle half (performance-01's
     rule, `checks.halves`), the one-time cost and its fraction to 1e-9 relative, the verdict (a
     bool) exactly. A mean for the median, a full range or "slower than every steady call" for the
     middle half, a first call merely above the median, or one on the 75th percentile read as
     above it, fails. A forger would have to do the arithmetic for
     timings it sees only at grading time. The timer is the course's and is not graded here
     (performance-01 grades it); stage 1 also times workload with it and reports the timings and
     the student's reading of them, never judged.
  test_trace_count (stage 2, `check_trace_count`): *observed*. This side draws the steps one at
     a time, each only after it read the counter after the last, and makes every call of workload
     itself (arrays sent from here) and every reading of trace_count(): a few new shapes picked at
     random, each called again, in a random order; once, a shape already called, called under
     another default matmul precision (`jax.default_matmul_precision`, part of JAX's trace
     context: JAX traces again at a shape it has a program for); then `jax.clear_caches()` and a
     shape seen before, twice. Expected, computed here: +1 for a call JAX has no program for
     (shape and context) since the last clear, 0 for a repeat. A call counter moves on repeats; a
     counter of new shapes stays put under the new context and after the clear. Only the clear
     and the call under another precision are probes, and a probe that skips its work changes
     what JAX traces next, which an honest counter then shows, so forging probes gains nothing:
     the readings are the student's own counter's. Limit: a counter that models JAX's cache (the
     avals of each call and JAX's trace context, reset on every clear it intercepts) instead of
     counting reads the same numbers for every call sequence, so no reading tells it apart.
  test_evidence (stage 3, `write_evidence`): the course's timer is called from here on the
     identity (its output checked for form, reported, never judged: the timer cells judge it),
     the lesson's counting step is driven from here as above (16x16, 32x32, then both again:
     reported), and the JAXPR is *verified*: its text is captured by a probe, and workload
     itself is exported from the student's kernel at the captured shapes (`checks.programs`,
     jax.debug callbacks left out); that program must hold the matrix product and tanh, run here
     on fresh inputs it must give what workload itself returns for them (so it is workload's
     program, not one written to pass), and traced here it must take the argument types the text
     declares, whose equations must name dot_general and tanh. The student's build_report is
     called from here with those measurements and its report is judged here (*verified*): plain
     JSON, every measurement unchanged, their median, this machine's backend and versions,
     "memory_measured": false. Only a report that passes is written, as report.json beside
     workload.jaxpr.txt, by a probe in the student's process (into the evidence directory, or a
     temporary one it makes and removes), which reads the files back: *evidence only* (the text
     read back is judged again, but nothing there is the student's work; a forger gains nothing
     by echoing it).
  test_audit (stage 4): stages 1, 2 and 3 in one run, each as above.

Every failure is an `AuditFailure` (an AssertionError) whose message says what to change, and
never names the inputs picked at grading time; an error of the student's code is the CheckFailed
`student_calls.call_student` words for it. Imports: jax, numpy, the standard library and
this package's channel code only, so check.py can load this file from the repository without the
course's package installed.
"""
from __future__ import annotations

import json
import math
import operator
import platform
import random
import re
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import CheckFailed, halves, numerics, programs, remote, trusted
from .roofline import key_problems
from .student_calls import call_student, one_line, raised, said_as

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
CLEAR, CALL, CONTEXT = "clear", "call", "context"   # the steps of the trace protocol
# Default matmul precisions the trace protocol calls workload under once (jax.default_matmul_precision,
# part of JAX's trace context): one that differs from the precision in effect is used.
PRECISIONS = ("highest", "float32", "bfloat16", "tensorfloat32")
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
    first_call_evidence: Callable
    name: str = "notebook"

    PARTS = ("workload", "trace_count", "time_first_and_steady", "build_report", "first_call_evidence")

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


def _raised(what: str, kind: str, message: str) -> AuditFailure:
    """A failure the course's probe reported from the student's kernel, worded as `call_student` words one."""
    return AuditFailure(raised(what, said_as(kind, message)))


def _probe(what: str, name: str, *args, **kwargs) -> dict:
    """A probe's answer, a dict; the student's failure it reports becomes an AuditFailure."""
    answer = call_student(what, remote.probe, name, *args, **kwargs)
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
# Stage 1: the result, and what timings show


def check_workload(workload) -> dict:
    """workload is jitted and computes tanh(a @ b): on the identity, then on fresh random inputs."""
    # jax.jit's own type (a stand-in's class is the trusted kernel's by the name the student's
    # process reports): a function that merely carries a jitted twin's `lower` runs what it likes.
    if not isinstance(workload, type(jax.jit(abs))):
        raise AuditFailure("workload must be compiled with jax.jit (decorate it with @jax.jit)")
    eye = _identity()
    got = _array(call_student("workload(I, I)", workload, eye, eye), "workload(I, I)")
    if got.shape != (IDENTITY_SIZE, IDENTITY_SIZE) or got.dtype != DTYPE:
        raise AuditFailure(f"workload(I, I) should be a {IDENTITY_SIZE}x{IDENTITY_SIZE} float32 array, got "
                           f"shape {got.shape} and dtype {got.dtype}")
    expected = np.tanh(np.eye(IDENTITY_SIZE, dtype=DTYPE) @ np.eye(IDENTITY_SIZE, dtype=DTYPE))
    diagonal = np.diag(got)
    off_diagonal = float(np.max(np.abs(got - np.diag(diagonal))))
    # I @ I is exact at every matrix-product precision (0 and 1 survive rounding to bfloat16), so
    # only tanh(1)'s float32 digits may differ: its last on a CPU, more with a TPU's tanh.
    if not np.allclose(got, expected, **numerics.tolerance(numerics.elementwise_precision())):
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
        result = _array(call_student(what, workload, jnp.asarray(a), jnp.asarray(b)), what)
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


FIRST_CALL_HINTS = {
    "steady_median_seconds": "the median of the steady calls (statistics.median), not their mean",
    "steady_middle_half_seconds": "the steady middle half is [25th, 75th] percentile of the steady calls, as "
                                  "np.percentile(steady_seconds, [25, 75]) computes them (NumPy's default, linear "
                                  "interpolation), not the fastest and slowest call",
    "one_time_seconds": "the one-time cost is the first call minus the steady median",
    "one_time_fraction": "the fraction is the one-time cost divided by the first call",
}


def expected_first_call(first_call_seconds: float, steady_seconds: list[float]) -> dict:
    """What the lesson asks of first_call_evidence, computed here: the first call, a single timing,
    is its own middle half, so it is slower only when it lies strictly above the steady 75th percentile."""
    median = statistics.median(steady_seconds)
    one_time = first_call_seconds - median
    return {"steady_median_seconds": median, "steady_middle_half_seconds": list(halves.middle_half(steady_seconds)),
            "one_time_seconds": one_time, "one_time_fraction": one_time / first_call_seconds,
            "one_time_is_real": halves.compare([first_call_seconds], steady_seconds) == halves.SLOWER}


FIRST_CALL_KINDS = ("compiled", "above the middle half, below the slowest", "inside the middle half",
                    "below the median", "on the 75th percentile")


def first_call_cases(rng: random.Random) -> list[tuple[str, float, list[float]]]:
    """(what, first call, steady calls) drawn here, one per FIRST_CALL_KINDS: a first call far above
    the steady calls; one above their middle half but below the slowest steady call and less than
    the full range above the median (a range, or "slower than every steady call", reads no
    one-time cost); one inside the middle half, above the median; one below the median; one exactly
    on the 75th percentile (5 or 9 steady calls, so that it is one of them: not above it). The steady
    calls 5 to 11 (odd and even), some with one busy moment's outlier; no other verdict hangs on a
    near tie."""
    cases = []
    for kind in FIRST_CALL_KINDS:
        while True:
            centre = 10 ** rng.uniform(-5, -2)
            count = rng.choice([5, 9]) if kind == "on the 75th percentile" else rng.randint(5, 11)
            steady = [centre * math.exp(rng.uniform(0.02, 0.3) * rng.gauss(0, 1)) for _ in range(count)]
            if rng.random() < 0.4:
                steady[rng.randrange(len(steady))] *= rng.uniform(3, 10)
            median, (_, high) = statistics.median(steady), halves.middle_half(steady)
            slowest, spread = max(steady), max(steady) - min(steady)
            first = {"compiled": slowest + centre * 10 ** rng.uniform(0, 3),
                     "above the middle half, below the slowest": high + (slowest - high) * rng.uniform(0.1, 0.9),
                     "inside the middle half": median + (high - median) * rng.uniform(0.1, 0.9),
                     "below the median": median * rng.uniform(0.6, 0.97),
                     "on the 75th percentile": sorted(steady)[3 * (count - 1) // 4]}[kind]
            apart = kind == "on the 75th percentile" or abs(first - high) > 1e-6 * high
            hides = kind != "above the middle half, below the slowest" or first - median <= spread
            if first > 0 and apart and hides and (kind != "inside the middle half" or first > median):
                cases.append((f"timings {len(cases) + 1} of {len(FIRST_CALL_KINDS)}", first, steady))
                break
    return cases


def first_call_problems(got, first: float, steady: list[float], what: str) -> list[str]:
    try:
        got = remote.values_only(got)
    except CheckFailed as exc:
        return [one_line(exc)]
    if not isinstance(got, dict):
        return [f"first_call_evidence should return a dict, got {type(got).__name__} ({what})"]
    want = expected_first_call(first, steady)
    real = want.pop("one_time_is_real")
    problems = key_problems(got, want, FIRST_CALL_HINTS, what)
    said = got.get("one_time_is_real")
    if not isinstance(said, (bool, np.bool_)) or bool(said) != real:
        problems.append(f"one_time_is_real is {said!r}, not {real!r} ({what}): True only when the first call lies "
                        "strictly above the steady 75th percentile (a single timing is its own middle half: "
                        "above the median, or on the 75th percentile, is not enough)")
    return problems


def check_first_call_evidence(first_call_evidence, rng: random.Random | None = None) -> None:
    """first_call_evidence on timings drawn here, against this side's own computation."""
    rng = rng or random.Random()
    for what, first, steady in first_call_cases(rng):
        got = call_student(f"first_call_evidence on {what}", first_call_evidence, first, list(steady))
        problems = first_call_problems(got, first, steady, what)
        if problems:
            raise AuditFailure("; ".join(problems))


def _timings(value, steady_calls: int) -> tuple[float, list[float]]:
    """The timer's real output, checked for form only: no timing decides pass or fail."""
    try:
        value = remote.values_only(value)
    except CheckFailed as exc:
        raise AuditFailure(f"time_first_and_steady: {one_line(exc)}") from None
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


def clear_caches() -> None:
    """jax.clear_caches() in the student's process (a course probe; in-process on the command line)."""
    what = "jax.clear_caches()"
    error = _error(_probe(what, "audit.clear_caches"))
    if error:
        raise _raised(what, error[1], error[2])


def measure_timing(workload, timer) -> dict:
    """A real synchronized measurement of workload(I, I), made by the student's timer called from
    here (the identity sent from here, on the student's device): the first call after the caches
    are cleared, then STEADY_CALLS steady calls. Reported, never judged."""
    what = "time_first_and_steady(workload, I, I)"
    eye = _identity()
    clear_caches()  # forget compiled programs: the first call traces and compiles again
    first, steady = _timings(call_student(what, timer, workload, eye, eye, **{TIMER_KEYWORD: STEADY_CALLS}),
                             STEADY_CALLS)
    return {"workload": WORKLOAD, "dtype": np.dtype(DTYPE).name,
            "timed_shapes": [[IDENTITY_SIZE, IDENTITY_SIZE], [IDENTITY_SIZE, IDENTITY_SIZE]],
            "boundary": BOUNDARY, "first_call_seconds": first, "steady_seconds": steady}


def stage1(impl: Implementation) -> str:
    found = check_workload(impl.workload)
    check_first_call_evidence(impl.first_call_evidence)
    timing_run = measure_timing(impl.workload, impl.time_first_and_steady)
    first, steady = timing_run["first_call_seconds"], timing_run["steady_seconds"]
    read = expected_first_call(first, steady)  # the reading first_call_evidence was just shown to make
    return (f"tanh(I @ I) matches NumPy (diagonal {found['diagonal']:.6f}, off-diagonal "
            f"{found['off_diagonal']:.1g}), and so do random inputs; first_call_evidence reads drawn timings "
            f"right; first call {first:.3g} s, steady median {read['steady_median_seconds']:.3g} s over "
            f"{STEADY_CALLS} calls: a one-time cost of {read['one_time_seconds']:.3g} s "
            f"({read['one_time_fraction']:.0%} of the first call), "
            f"{'above' if read['one_time_is_real'] else 'not above'} the steady middle half "
            f"({read['steady_middle_half_seconds'][0]:.3g} to {read['steady_middle_half_seconds'][1]:.3g} s) "
            "(this machine, this run)")


# ---------------------------------------------------------------------------------------------
# Stage 2: traces, counted by the student's counter in the student's process


class Counting:
    """workload and its counter, driven from here one step at a time: every call of workload is
    made here (in the notebook, through the channel, with arrays sent from here) and trace_count()
    is read here after it. Only jax.clear_caches() and a call under another matmul precision are
    done by course probes in the student's process; a probe that skips its work changes what JAX
    traces next, which an honest counter then shows."""

    def __init__(self, workload, trace_count):
        self.workload, self.trace_count = workload, trace_count

    def read(self) -> int:
        return _integer(call_student("trace_count()", self.trace_count), "trace_count()")

    def clear(self) -> None:
        clear_caches()

    def call(self, inputs, what: str) -> None:
        a, b = inputs
        call_student(what, self.workload, jnp.asarray(a), jnp.asarray(b))

    def call_in_context(self, inputs, what: str, rng: random.Random) -> None:
        """workload(a, b) under jax.default_matmul_precision(p), p one of PRECISIONS (shuffled
        here) other than the precision in effect there: a new trace context, so JAX traces again."""
        a, b = inputs
        candidates = list(PRECISIONS)
        rng.shuffle(candidates)
        answer = _probe(what, "audit.call_in_context", self.workload, jnp.asarray(a), jnp.asarray(b), candidates)
        error = _error(answer)
        if error:
            raise _raised(what, error[1], error[2])
        if answer.get("precision") not in PRECISIONS:
            raise AuditFailure(f"{what}: the course's probe in your kernel answered without the precision it "
                               "used (was perfcourse.kernel.probes replaced?)")


class TraceProtocol:
    """The steps of the trace-count check, drawn here one at a time, each only once the counter
    was read after the last: 2 or 3 new shapes picked at random, each called twice in a random
    order; once, after some shape's first call, that shape called under another default matmul
    precision (a new trace context: JAX traces again at a shape it has a program for); then
    jax.clear_caches() and one of the shapes, twice. What JAX does, computed here: one trace for a
    call whose (shape, context) it has no program for since the last clear, none otherwise."""

    def __init__(self, rng: random.Random | None = None, np_rng=None):
        self.rng = rng or random.Random()
        np_rng = np_rng if np_rng is not None else np.random.default_rng(self.rng.getrandbits(63))
        triples = _fresh_triples(np_rng, self.rng.choice((2, 3)))
        self.inputs = [(_random(np_rng, (m, k)), _random(np_rng, (k, n), 1 / math.sqrt(k))) for m, k, n in triples]
        self._calls = [0] * len(self.inputs)
        self._context_done = False
        self._again: int | None = None
        self._after_clear = 0
        self._traced: set = set()   # (shape index, in another context) that JAX has a program for

    def next(self):
        """((kind, index), traces) for the next step, kind CALL, CONTEXT or CLEAR; None at the end."""
        rng = self.rng
        if self._again is None:
            pending = [i for i, n in enumerate(self._calls) if n < 2]
            called = [i for i, n in enumerate(self._calls) if n >= 1]
            if not self._context_done and called and (not pending or rng.random() < 0.3):
                self._context_done = True
                step = (CONTEXT, rng.choice(called))
            elif pending:
                index = rng.choice(pending)
                self._calls[index] += 1
                step = (CALL, index)
            else:
                self._again = rng.randrange(len(self.inputs))
                step = (CLEAR, None)
        elif self._after_clear < 2:
            self._after_clear += 1
            step = (CALL, self._again)
        else:
            return None
        return step, self._traces(step)

    def _traces(self, step) -> int:
        kind, index = step
        if kind == CLEAR:
            self._traced.clear()
            return 0
        key = (index, kind == CONTEXT)
        new = key not in self._traced
        self._traced.add(key)
        return int(new)


def check_trace_count(workload, trace_count, rng: random.Random | None = None) -> dict:
    """Stage 2: one trace per call JAX has no program for (a new shape, another trace context, a
    known shape after jax.clear_caches()), none for a repeat, for steps picked here one at a time;
    workload is called and its counter read from here after every step."""
    protocol = TraceProtocol(rng)
    counting = Counting(workload, trace_count)
    counting.clear()
    readings = [counting.read()]
    steps, expected = [], []
    while (drawn := protocol.next()) is not None:
        (kind, index), traces = drawn
        if kind == CLEAR:
            counting.clear()
        elif kind == CONTEXT:
            counting.call_in_context(protocol.inputs[index], "workload under another jax.default_matmul_precision",
                                     protocol.rng)
        else:
            counting.call(protocol.inputs[index], "workload at a new shape")
        readings.append(counting.read())
        steps.append(kind)
        expected.append(traces)
    moved = [after - before for before, after in zip(readings, readings[1:])]
    if not any(moved):
        raise AuditFailure("the trace counter did not move when workload ran at new shapes: add 1 to it in "
                           "workload's Python body, which runs each time JAX traces the function")
    cleared = False
    for kind, got, want in zip(steps, moved, expected):
        if kind == CLEAR:
            cleared = True
            if got:
                raise AuditFailure("jax.clear_caches() moved the trace counter: count traces in workload's body, "
                                   "nothing else")
        elif want == 0 and got != 0:
            raise AuditFailure(
                f"calling workload again at a shape it had already run at moved the counter by {got}: it counts "
                "calls, not traces. Count with a plain Python statement in the jitted function's body, which "
                "runs only when JAX traces (not in a callback, not around the call)")
        elif want == 1 and got != 1 and kind == CONTEXT:
            raise AuditFailure(
                f"calling workload at a shape it had already run at, under another default matmul precision "
                f"(jax.default_matmul_precision: a new trace context), made JAX trace it again, and the counter "
                f"moved by {got}, not 1: it counts new shapes, not traces. Count with a plain Python statement in "
                "the jitted function's body, which runs every time JAX traces it")
        elif want == 1 and got != 1 and cleared:
            raise AuditFailure(
                f"after jax.clear_caches(), JAX traced workload again at a shape it had seen before, and the "
                f"counter moved by {got}, not 1: it counts new shapes, not traces. Count with a plain Python "
                "statement in the jitted function's body, which runs every time JAX traces it")
        elif want == 1 and got != 1:
            raise AuditFailure(f"a call at a new shape traces workload once, but the counter moved by {got}: "
                               "add exactly 1 per trace, in workload's body")
    return {"calls": sum(kind != CLEAR for kind in steps), "traces": sum(expected), "readings": readings}


def count_traces(workload, trace_count) -> dict:
    """The lesson's counting step, for the report: after jax.clear_caches(), calls at 16x16 and
    32x32, then at both again, made from here; the counter's increase after each round (not
    judged here)."""
    rng = np.random.default_rng()
    inputs = [(_random(rng, shape), _random(rng, shape, 1 / math.sqrt(shape[0]))) for shape in TRACED_SHAPES]
    counting = Counting(workload, trace_count)
    counting.clear()
    readings = [counting.read()]
    for index in (0, 1, 0, 1):
        counting.call(inputs[index], f"workload at {_shape_text(TRACED_SHAPES[index])}")
        readings.append(counting.read())
    return {"traced_shapes": [list(s) for s in TRACED_SHAPES], "trace_count": readings[2] - readings[0],
            "after_repeat": readings[4] - readings[0]}


def stage2(impl: Implementation) -> str:
    check_trace_count(impl.workload, impl.trace_count)
    return ("the counter moved by one for every call JAX had no trace for (new shapes picked at random, a "
            "known shape under another matmul precision, and a known shape after jax.clear_caches()) and not at "
            "all for repeated calls")


# ---------------------------------------------------------------------------------------------
# Stage 3: the evidence


def capture_jaxpr(workload) -> str:
    """The symbolic program of workload at the timed shapes, captured in the student's process and
    checked here against workload's own program (`verify_jaxpr`). Call it after reading the
    counter: make_jaxpr traces the Python function when JAX has no trace of it for these shapes
    and dtypes (after jax.clear_caches(), or at a shape not called yet)."""
    what = "jax.make_jaxpr(workload)(I, I)"
    answer = _probe(what, "audit.capture_jaxpr", workload, IDENTITY_SIZE)
    error = _error(answer)
    if error:
        raise _raised(what, error[1], error[2])
    text = answer.get("text")
    if type(text) is not str:
        raise AuditFailure(f"{what}: the course's probe in your kernel answered without a JAXPR")
    verify_jaxpr(workload, text)
    return text


# The operations the JAXPR of tanh(a @ b) must show, and the StableHLO operations they become.
OPERATIONS = (("dot_general", ("stablehlo.dot_general", "stablehlo.dot")), ("tanh", ("stablehlo.tanh",)))
_EQUATION = re.compile(r"(?m)^\s*(?:[^\s:=]+:\S+\s+)+=\s+([A-Za-z_]\w*)")
_ARGUMENTS = re.compile(r"\s*\{\s*lambda\s*[^;]*;\s*(.*?)\.\s*let\b", re.S)


def jaxpr_arguments(text: str) -> list[str] | None:
    """The types of a JAXPR's arguments, as its text declares them (`f32[64,64]`), or None."""
    found = _ARGUMENTS.match(text)
    return None if found is None else re.findall(r"[^\s:]+:(\S+)", found.group(1))


def jaxpr_primitives(text: str) -> set[str]:
    """The primitives of a JAXPR's equations, nested ones included, read from its text."""
    return set(_EQUATION.findall(text))


def verify_jaxpr(workload, text: str) -> None:
    """The captured JAXPR is checked against workload's program, which this side examines itself:
    workload exported from the student's kernel at the captured shapes (`checks.programs`), its
    StableHLO holding the matrix product and tanh, run here on fresh inputs and giving what
    workload itself returns for them (so it is workload's program, not another), and traced here
    to the argument types the text must declare."""
    specs = [((IDENTITY_SIZE, IDENTITY_SIZE), np.dtype(DTYPE).name)] * 2
    try:
        program = programs.exported(workload, specs, what="workload", drop_debug_callbacks=True)
    except AuditFailure:
        raise
    except CheckFailed as exc:
        raise AuditFailure(one_line(exc)) from None
    found = set(programs.operations(program))
    missing = [name for name, operations in OPERATIONS if not found.intersection(operations)]
    if missing:
        raise AuditFailure(f"the program of workload has no {' or '.join(missing)}: it should be the matrix "
                           "product followed by tanh")
    rng = np.random.default_rng()
    a, b = _random(rng, specs[0][0]), _random(rng, specs[1][0], 1 / math.sqrt(IDENTITY_SIZE))
    try:
        ran = np.asarray(program.call(jnp.asarray(a), jnp.asarray(b)))
    except Exception as exc:
        raise AuditFailure(f"the program exported from workload does not run ({type(exc).__name__})") from None
    what = "workload on random inputs"
    direct = _array(call_student(what, workload, jnp.asarray(a), jnp.asarray(b)), what)
    if ran.shape != direct.shape or not np.allclose(ran, direct, **numerics.tolerance(numerics.matmul_precision())):
        raise AuditFailure("the program exported from workload, run by the grader, and workload itself give "
                           "different results on the same inputs (was perfcourse.kernel.probes replaced?)")
    traced = jax.make_jaxpr(program.call)(*(jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in specs))
    arguments = [var.aval.str_short(short_dtypes=True) for var in traced.jaxpr.invars]
    if jaxpr_arguments(text) != arguments:
        raise AuditFailure(f"the JAXPR captured in your kernel is not one of workload at its arguments "
                           f"({', '.join(arguments)})")
    absent = [name for name, _ in OPERATIONS if name not in jaxpr_primitives(text)]
    if absent:
        raise AuditFailure(f"the JAXPR of workload has no {' or '.join(absent)}: it should be the "
                           "matrix product followed by tanh")


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
    report = check_report(call_student("build_report(measurements)", impl.build_report, dict(measurements)),
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
        except CheckFailed as exc:  # an AuditFailure, or the student's error as call_student words it
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
    except CheckFailed as exc:
        emit(fail_line(stage, exc))
        return False
    emit(pass_line(stage, detail))
    return True
