"""Grade reading a program's stages without running it: fresh shapes, a watched workload, stand-ins.

performance-03's students write `estimates_from(compiled)`, which turns a compiled program's
`cost_analysis()` and `memory_analysis()` into plain numbers and says which are missing,
`read_program(fn, *args)`, which traces, lowers and compiles `fn` for the shapes of `args`
without running it, and `matmul_flops(m, k, n)`, the hand count of a product.

Grade cells run in the trusted kernel; the student's definitions live in the student's kernel.
What the trusted kernel believes, it observed or verified itself. Per cell:

- test_estimates_absent (`check_estimates_absent`), *values only*: eight stand-in compiled
  programs, shuffled, scripted here with fresh numbers (a dict, a list of one dict as older JAX
  returns, `None`, exceptions a backend raises, absent keys and attributes, a `None` value, real
  zeros), are built in the student's process by a course probe and handed to `estimates_from`.
  Present estimates must be the scripted numbers (a zero stays zero), missing ones `None` and
  named in "missing" with a reason. A probe replaced in the student's kernel is handed the scripts,
  and answering them right is computing, for each, exactly what a right `estimates_from` returns:
  the task's own normalization, written in another function. Nothing else passes.
- test_read_program_stages (`check_read_program_stages`), *observed and verified*: for two fresh
  (m, k, n), this kernel calls the student's `read_program` itself (over the channel, not through
  a probe) on a workload whose body is this kernel's own object (`WatchedProduct`, `(a @ b) * scale
  + shift` for numbers drawn here), lent: JAX runs a function's Python body only when it traces it,
  and every call of the body comes back here, so the traces and the shapes they had are observed
  here; the arguments are arrays sent from here. Then the programs are run, from here, on fresh
  arrays of those shapes: the returned compiled program, and the returned lowered program once its
  own `compile()` has built it in the student's kernel, must each give the workload's values for
  them (NumPy, float32 tolerance; the numbers drawn here are in the program only if it was traced
  from the workload handed over), so each is the workload's program for the arguments' shapes,
  whatever way it was lowered (committed arrays, shardings, a jit inside a jit). "stablehlo" must
  be the returned lowered program's own text, and "estimates" what the student's own
  `estimates_from` gives for the compiled program (a mistake in `estimates_from` costs only its own
  cell). The jaxpr's shapes and the stages' types are asked of the student's objects (*evidence*:
  its kernel answers). A replaced probe can hand `read_program` another workload, and a replaced
  agent can answer for it, but programs that do not compute the workload with the numbers drawn
  here give it away: passing takes tracing, lowering and compiling the workload handed over for the
  arguments' shapes, which is the task, or objects that imitate a lowered and a compiled program
  (computing the workload with NumPy from numbers a fake tracer is shown), which is more.
- test_read_program_not_run (`check_read_program_not_run`): `read_program` gets fresh arrays once
  and ShapeDtypeStructs (no data, built in its kernel) once. *Observed*: it traced the workload (its
  body was called here with tracers), it never called the workload with data (the body would be
  called here with the arrays), and no execution of the program it read was reported while it ran;
  the compiled program it returns, run from here on fresh arrays, must report that run, so the
  report is part of the program it read (a workload handed over without it is caught). *Evidence
  only* beyond that: the report is a debug callback to this kernel, and the callback is code of the
  student's process. A submission that replaces the probe building the workload with one whose
  callback drops reports while `read_program` runs (and forwards them afterwards), or that computes a
  copy of the workload in a program of its own, runs unseen: no check outside a process can see a
  run it does not report. Such a submission must still read the program right to pass the stages
  cell. Before grading, `execution_instrument()` confirms in this kernel that this JAX runs a debug
  callback on the calling thread before the call returns (InstrumentMissing otherwise, never a
  student's mistake). Run as a notebook (no channel: recording artifacts on a TPU, whose runtime
  runs callbacks on a thread of its own after the call returns), the checks wait for callbacks with
  jax.effects_barrier() before they count (settle_callbacks).
- test_hand_count (`check_hand_count`), *values only*: `matmul_flops` for fresh shapes (every
  dimension 2..999) and for shapes with a dimension of 1, where XLA rewrites the product and its
  estimate is not the textbook count: the count must be 2*m*k*n, an int. Called from here.

Fresh shapes for compiled products have every dimension in 2..96: XLA rewrites a product with a
dimension of 1, and it keeps estimates in single precision, so counts stay below 2**24.

The checks never read JAX's printed text, except to see that "stablehlo" is the text of the
lowered program returned beside it.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from ..channel.codec import ChannelError
from . import CheckFailed, InstrumentMissing, numerics, remote
from .student_calls import number, said

STAGE_KEYS = ("jaxpr", "lowered", "stablehlo", "compiled", "estimates")

# The estimate fields a student's `estimates_from` returns, and where the compiler keeps each.
COST_KEYS = {"flops": "flops", "bytes_accessed": "bytes accessed"}
MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
}
ESTIMATE_FIELDS = (*COST_KEYS, *MEMORY_FIELDS)
LESSON_SHAPES = (64, 32, 16)  # the lesson's own (m, k, n): fresh shapes never equal them


def matmul_flops(m: int, k: int, n: int) -> int:
    """The hand count: m*n outputs, each k multiplies and k adds."""
    return 2 * m * k * n


def fresh_matmul_shapes(rng: np.random.Generator, low: int = 2, high: int = 97) -> tuple[int, int, int]:
    """Random (m, k, n), every dimension at least 2 (XLA rewrites products with a dimension of 1)."""
    while True:
        shapes = tuple(int(v) for v in rng.integers(low, high, 3))
        if shapes != LESSON_SHAPES:
            return shapes


def shapes(tree) -> list[tuple[int, ...]]:
    """The shapes of the leaves of a tree of abstract values (avals, ArgInfo, ShapeDtypeStruct)."""
    import jax
    return [tuple(leaf.shape) for leaf in jax.tree.leaves(tree)]


def matmul_inputs(rng: np.random.Generator, m: int, k: int, n: int, *, specs: bool = False):
    """Random float32 inputs of an (m, k) @ (k, n) product, or their ShapeDtypeStructs."""
    import jax
    import jax.numpy as jnp
    if specs:
        return jax.ShapeDtypeStruct((m, k), jnp.float32), jax.ShapeDtypeStruct((k, n), jnp.float32)
    # a scaled by 1/sqrt(k): the product's entries are about 1 whatever k, so the tolerance of the
    # precision in use (bfloat16 passes: 3e-2) holds for every shape drawn
    a = (rng.standard_normal((m, k), dtype=np.float32) / np.float32(np.sqrt(k))).astype(np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return jnp.asarray(a), jnp.asarray(b)


def backend_estimates(compiled) -> dict:
    """The compiler's own numbers for `compiled`, normalized the way the lesson teaches."""
    try:
        costs = compiled.cost_analysis()
    except Exception:
        costs = None
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else None
    costs = costs if isinstance(costs, dict) else {}
    try:
        memory = compiled.memory_analysis()
    except Exception:
        memory = None
    found = {name: number(costs.get(key), finite=False) for name, key in COST_KEYS.items()}
    found.update({name: number(getattr(memory, attr, None), finite=False) for name, attr in MEMORY_FIELDS.items()})
    return found


# --- test_estimates_absent ----------------------------------------------------------------------
@dataclass
class StandInCase:
    name: str
    script: dict    # {"cost": answer, "memory": answer}; answer = {"returns": value} or {"raises": [kind, text]}
    expected: dict  # field -> number, or None where the estimate is missing


def stand_in_cases(rng: np.random.Generator) -> list[StandInCase]:
    """Scripted compiled programs with fresh numbers: complete, another shape, partial, absent, failing, zero."""
    def cost_numbers():
        return {"flops": float(rng.integers(100, 10**7)), "bytes_accessed": float(rng.integers(100, 10**6))}

    def memory_numbers():
        return {name: int(rng.integers(1, 10**6)) for name in MEMORY_FIELDS}

    def cost_dict(numbers_, drop=()):
        extra = {"transcendentals": float(rng.integers(0, 1000)), "utilization0{}": 1.0,
                 "bytes accessed0{}": float(rng.integers(0, 1000))}
        return {**extra, **{COST_KEYS[k]: v for k, v in numbers_.items() if k not in drop}}

    def memory_stats(numbers_, drop=()):
        # The attributes a CompiledMemoryStats has, a zero among them as on the CPU backend.
        return {**{MEMORY_FIELDS[k]: v for k, v in numbers_.items() if k not in drop},
                "alias_size_in_bytes": 0, "generated_code_size_in_bytes": 0}

    def returns(value):
        return {"returns": value}

    def raises(kind, text):
        return {"raises": [kind, text]}

    nothing = dict.fromkeys(ESTIMATE_FIELDS)
    cases = []

    c, m = cost_numbers(), memory_numbers()
    cases.append(StandInCase("a dict and complete memory stats",
                             {"cost": returns(cost_dict(c)), "memory": returns(memory_stats(m))}, {**c, **m}))
    c, m = cost_numbers(), memory_numbers()
    cases.append(StandInCase("a list holding one dict (older JAX)",
                             {"cost": returns([cost_dict(c)]), "memory": returns(memory_stats(m))}, {**c, **m}))
    cases.append(StandInCase("None from both", {"cost": returns(None), "memory": returns(None)}, dict(nothing)))
    cases.append(StandInCase("exceptions from both",
                             {"cost": raises("NotImplementedError", "cost analysis is not available"),
                              "memory": raises("JaxRuntimeError", "UNIMPLEMENTED: memory analysis")},
                             dict(nothing)))
    m = memory_numbers()
    cases.append(StandInCase("an empty list and memory stats without temp_size_in_bytes",
                             {"cost": returns([]), "memory": returns(memory_stats(m, drop=("temp_bytes",)))},
                             {**nothing, **m, "temp_bytes": None}))
    c = cost_numbers()
    cases.append(StandInCase("a dict without 'bytes accessed', memory None",
                             {"cost": returns(cost_dict(c, drop=("bytes_accessed",))), "memory": returns(None)},
                             {**nothing, "flops": c["flops"]}))
    c = cost_numbers()
    cases.append(StandInCase("a dict holding None for 'flops'",
                             {"cost": returns({**cost_dict(c), "flops": None}),
                              "memory": raises("RuntimeError", "memory analysis failed")},
                             {**nothing, "bytes_accessed": c["bytes_accessed"]}))
    c, m = cost_numbers(), memory_numbers()
    c["flops"], m["temp_bytes"] = 0.0, 0
    cases.append(StandInCase("a program with no arithmetic and no temporaries (real zero estimates)",
                             {"cost": returns(cost_dict(c)), "memory": returns(memory_stats(m))}, {**c, **m}))
    return cases


def estimate_problems(estimates, expected: dict) -> list[str]:
    """How a student's estimates differ from what the compiler said: empty when they agree.

    Present estimates must be the compiler's numbers (not rounded, not replaced; a zero stays
    zero); missing ones must be None (never 0), and `estimates["missing"]` must name exactly the
    missing ones, each with a non-empty reason.
    """
    if not isinstance(estimates, dict):
        return [f"expected a dict of estimates, got {type(estimates).__name__}"]
    problems = []
    for name, want in expected.items():
        if name not in estimates:
            problems.append(f"no {name!r} field")
            continue
        got = estimates[name]
        if want is None:
            if got is not None:
                problems.append(f"{name}: the compiler gave no estimate, but the result says {got!r}")
        elif got is None:
            problems.append(f"{name}: the compiler gave an estimate{' (a zero)' if want == 0 else ''}, "
                            "but the result says None: keep the compiler's number as it is")
        else:
            value = number(got, finite=False)
            if value is None or not math.isclose(value, float(want), rel_tol=1e-9, abs_tol=0):
                problems.append(f"{name}: the result {got!r} is not the compiler's estimate")
    missing = estimates.get("missing")
    absent = sorted(name for name, want in expected.items() if want is None)
    if not isinstance(missing, dict):
        problems.append(f"'missing' should be a dict naming each missing estimate, got {type(missing).__name__}")
    else:
        if sorted(missing) != absent:
            problems.append(f"'missing' names {sorted(missing)}, the missing estimates are {absent}")
        empty = [k for k, reason in missing.items() if not isinstance(reason, str) or not reason.strip()]
        if empty:
            problems.append(f"'missing' gives no reason for {empty}")
    return problems


def check_estimates_absent(estimates_from, rng: np.random.Generator | None = None) -> None:
    """The student's estimates_from on every stand-in compiled program, built in its own process."""
    rng = rng or np.random.default_rng()
    cases = stand_in_cases(rng)
    random.Random(int(rng.integers(2**31))).shuffle(cases)
    answers = remote.probe("stages.estimates_of_stand_ins", estimates_from, [case.script for case in cases])
    if not isinstance(answers, list) or len(answers) != len(cases):
        raise CheckFailed("the stand-in compiled programs got no answers")
    for case, answer in zip(cases, answers):
        if not isinstance(answer, dict) or ("returned" not in answer and "raised" not in answer):
            raise CheckFailed(f"estimates_from gave no answer for a compiled program with {case.name}")
        if "raised" in answer:
            raise CheckFailed(f"estimates_from crashed on a compiled program with {case.name}: {answer['raised']}")
        problems = estimate_problems(answer["returned"], case.expected)
        if problems:
            raise CheckFailed(f"a compiled program with {case.name}: {'; '.join(problems)}")


# --- test_read_program_stages, test_read_program_not_run --------------------------------------
class WatchedProduct:
    """The workload's body, `(a @ b) * scale + shift` for numbers picked at grading time: it lives
    in this kernel.

    Student code holds it only as a stand-in whose calls come back here, so every call is seen
    here, by this kernel: with tracers it is a trace (JAX runs a function's Python body only when it
    traces it), and its shapes are recorded; with arrays it is a run on data, computed here and
    counted. Nothing about it crosses but its calls: its numbers stay under underscore names.
    """

    def __init__(self, m: int, k: int, n: int, scale: float, shift: float):
        self._shapes = [(m, k), (k, n)]
        self._scale, self._shift = scale, shift
        self._traces: list[list[tuple[int, ...]]] = []
        self._runs = 0

    def __call__(self, a, b):
        import jax.numpy as jnp

        kinds = [_argument_kind(x) for x in (a, b)]
        if kinds == ["tracer", "tracer"]:
            self._traces.append([_shape_of(a), _shape_of(b)])
            return (a @ b) * self._scale + self._shift
        if kinds == ["array", "array"]:
            self._runs += 1
            if [tuple(np.shape(a)), tuple(np.shape(b))] != self._shapes:
                raise TypeError("the workload takes the two arrays it was read for")
            return (jnp.asarray(a, np.float32) @ jnp.asarray(b, np.float32)) * self._scale + self._shift
        raise TypeError("the workload takes two arrays (or the tracers JAX passes it while tracing)")


def _argument_kind(value) -> str:
    """'tracer' (a JAX tracer, here or in the student's kernel), 'array' (data) or 'other'."""
    import jax

    if type(value) is remote.Remote:  # an object of the student's kernel: its type, as that kernel names it
        held = str(object.__getattribute__(value, "_info").get("type", ""))
        return "tracer" if held.startswith("jax.") and held.endswith("Tracer") else "other"
    if isinstance(value, jax.core.Tracer):
        return "tracer"
    if isinstance(value, (np.ndarray, jax.Array)):
        return "array"
    return "other"


def _shape_of(value) -> tuple[int, ...] | None:
    try:
        return tuple(int(d) for d in value.shape)
    except Exception:
        return None


class Executions:
    """Reports of the workload's executions. The course's code puts a debug callback to this object
    in the workload (`perfcourse.kernel.probes.stages.watched_workload`): each execution of its
    compiled program calls it, on the CPU synchronously on the thread that runs the program, with
    the first element of its first input, and the call comes back here."""

    MAX_REPORTS = 10_000

    def __init__(self):
        self._values: list[float | None] = []

    def __call__(self, value=None):
        if len(self._values) < self.MAX_REPORTS:
            try:
                self._values.append(float(np.asarray(value, dtype=np.float64).reshape(-1)[0]))
            except Exception:
                self._values.append(None)


_execution_instrument_confirmed = False  # for this process: its JAX does not change


def settle_callbacks() -> None:
    """Where no channel is open (the lesson run as a notebook: `perfcourse artifacts`, `perfcourse
    solved`, the tests), wait for the debug callbacks of programs already called. A CPU runs them on
    the calling thread before the call returns; a TPU (jax 0.10.2, measured) on a thread of its own
    after it returns, and jax.effects_barrier() waits for them. Grading runs both kernels on the
    CPU, where there is nothing to wait for."""
    if not remote.grading():
        import jax

        jax.effects_barrier()


def execution_instrument() -> None:
    """Check, in this process, that this JAX runs a debug callback in a compiled program by the time
    the call returns (the CPU runtime does, on the calling thread) or, without a channel, by the
    time settle_callbacks() returns (a TPU's runtime): the executions the not-run cell counts are
    then all reported when read_program's call is over. Otherwise InstrumentMissing, never a
    student's mistake."""
    global _execution_instrument_confirmed
    if _execution_instrument_confirmed:
        return
    import threading

    import jax
    import jax.numpy as jnp

    threads = []

    def program(a):
        jax.debug.callback(lambda *_: threads.append(threading.get_ident()), a[0])
        return a * 2

    jax.jit(program)(jnp.ones(4, jnp.float32))  # not waited for
    if remote.grading() and threads != [threading.get_ident()]:
        raise InstrumentMissing(
            f"jax {jax.__version__} on {jax.default_backend()}: a compiled program's debug callback did not run on "
            "the calling thread before the call returned: the not-run cell of performance-03 cannot "
            "count executions on this JAX; update perfcourse.checks.stages")
    settle_callbacks()
    if len(threads) != 1:
        raise InstrumentMissing(
            f"jax {jax.__version__} on {jax.default_backend()}: a compiled program's debug callback ran "
            f"{len(threads)} times for one call, after jax.effects_barrier(): the not-run cell of performance-03 "
            "cannot count executions on this JAX; update perfcourse.checks.stages")
    _execution_instrument_confirmed = True


@dataclass
class Reading:
    """One call of the student's read_program on the watched workload, as this kernel saw it."""
    m: int
    k: int
    n: int
    body: WatchedProduct
    executions: Executions | None   # None: the workload was built without its report
    raised: str | None = None
    broken: str | None = None       # why the course's workload could not be built in the student's kernel
    result: dict | None = None      # what read_program returned, when a dict: stand-ins for its objects
    returned: str = "nothing"       # its type's name
    traces: list = field(default_factory=list)
    runs: int = 0                   # calls of the workload with data (computed here)
    reports: list = field(default_factory=list)  # executions of its compiled program while it ran


def read_watched(read_program, m: int, k: int, n: int, rng: np.random.Generator, *, specs: bool,
                 reported: bool = True) -> Reading:
    """Call the student's read_program on a watched (m, k) @ (k, n) workload built for numbers
    picked here: fresh arrays sent from here, or ShapeDtypeStructs (no data) built in its kernel.
    With `reported`, each execution of its compiled program reports itself here.

    The call goes from this kernel to the student's function itself, not through a probe: what
    it returns comes back as stand-ins for its objects, which the checks then question here.
    """
    scale = float(np.float32(rng.uniform(0.5, 1.5)))
    shift = float(np.float32(rng.uniform(-0.5, 0.5)))
    body, executions = WatchedProduct(m, k, n, scale, shift), Executions() if reported else None
    reading = Reading(m, k, n, body, executions)
    try:
        built = remote.stand_in("stages.watched_workload", body, executions, [[m, k], [k, n]])
    except ChannelError:
        raise
    except Exception as exc:
        built = exc
    if type(built) is not tuple or len(built) != 2 or not callable(built[0]) or type(built[1]) is not tuple:
        reading.broken = ("the course's workload could not be built in the notebook's kernel: "
                          "leave the course's code alone")
        return reading
    workload, structs = built
    args = structs if specs else matmul_inputs(rng, m, k, n)
    try:
        result = read_program(workload, *args)
    except ChannelError:
        raise
    except Exception as exc:
        reading.raised = said(exc)
        result = None
    else:
        reading.returned = _type_name(result)
        if isinstance(result, dict):  # a plain dict, or the channel's copy of the student's
            reading.result = dict(dict.items(result))
    settle_callbacks()
    reading.traces = [list(t) for t in body._traces]
    reading.runs, reading.reports = body._runs, list(executions._values) if executions else []
    return reading


def _type_name(value) -> str:
    if type(value) is remote.Remote:
        return str(object.__getattribute__(value, "_info").get("type", "?")).rpartition(".")[2][:80]
    return type(value).__name__


def _ask(read, default=None):
    """A question to a student's object (a stand-in: student code answers it); `default` when it fails."""
    try:
        return read()
    except ChannelError:
        raise
    except Exception:
        return default


def _avals_shapes(jaxpr, which: str) -> list | None:
    return _ask(lambda: [tuple(int(d) for d in aval.shape) for aval in getattr(jaxpr, which)])


def trace_problems(traces: list, m: int, k: int, n: int) -> list[str]:
    if not traces:
        return ["read_program never traced the workload: trace fn for the shapes of args"]
    wrong = [call for call in traces if call != [(m, k), (k, n)]]
    if wrong:
        return [f"read_program traced the workload with shapes {wrong[0]}, not the shapes of the arguments "
                "it was given: trace for the shapes and dtypes of args"]
    return []


def run_compiled(reading: Reading, compiled, shapes_: list, rng: np.random.Generator, *,
                 values: bool = True, what: str = "the 'compiled' program read_program returned") -> list[str]:
    """Run a compiled program of the student's kernel, from here, on fresh arrays of `shapes_`: it
    must report exactly that one execution to this kernel, as the watched workload does (when it was
    built with its report), and (with `values`) give the workload's values for those arrays."""
    if not _product_shapes(shapes_):
        return ["read_program traced the workload with shapes that are not those of a product"]
    (m, k), (_, n) = shapes_
    a, b = matmul_inputs(rng, m, k, n)
    before = len(reading.executions._values) if reading.executions else 0
    try:
        out = compiled(a, b)
    except ChannelError:
        raise
    except Exception as exc:
        return [f"{what} could not be called on fresh arrays of the shapes it was read for "
                f"({said(exc)}): read the program of fn itself, for the shapes and dtypes of args"]
    settle_callbacks()
    if reading.executions and reading.executions._values[before:] != [float(np.asarray(a)[0, 0])]:
        return [f"{what} is not the workload it was handed (run on fresh arrays, it did not report that run "
                "as the workload does): return the compiled program of fn itself"]
    if not values:
        return []
    if type(out) is remote.Remote:
        return [f"{what} did not give an array"]
    body = reading.body
    want = (np.asarray(a, np.float64) @ np.asarray(b, np.float64)) * body._scale + body._shift
    try:
        numerics.check_close(out, want, f"{what}, run on fresh arrays, is not the workload's program")
    except CheckFailed as failure:
        return [str(failure)]
    return []


def stage_problems(reading: Reading, estimates_from, rng: np.random.Generator) -> list[str]:
    """How `read_program(fn, a, b)` for an (m, k) @ (k, n) workload departs from the contract.

    Observed here: the workload's traces and their shapes. Verified here: the lowered program's
    text is the one this kernel gets lowering the same workload; the compiled program, run here on
    fresh arrays, computes it and reports its run. Asked of the student's objects: the jaxpr's
    shapes, the stages' types, estimates_from(compiled).
    """
    m, k, n = reading.m, reading.k, reading.n
    if reading.broken:
        return [reading.broken]
    if reading.raised:
        return [f"read_program raised {reading.raised}"]
    problems = trace_problems(reading.traces, m, k, n)
    result = reading.result
    if result is None:
        return problems + [f"read_program should return a dict, got {reading.returned}"]
    absent = [key for key in STAGE_KEYS if key not in result]
    if absent:
        return problems + [f"the result has no {absent} key(s)"]
    ins, out = [(m, k), (k, n)], [(m, n)]

    jaxpr = result["jaxpr"]
    j_in, j_out = _avals_shapes(jaxpr, "in_avals"), _avals_shapes(jaxpr, "out_avals")
    if j_in is None or j_out is None or isinstance(jaxpr, (str, bytes)):
        problems.append(f"'jaxpr' should be a jaxpr (jax.make_jaxpr or Traced.jaxpr), got {_type_name(jaxpr)}")
    elif j_in != ins or j_out != out:
        problems.append(f"the jaxpr takes {j_in} and gives {j_out}: it is not the program for the arguments' shapes")

    import jax

    lowered, text = result["lowered"], None
    if not isinstance(lowered, jax.stages.Lowered):
        problems.append(f"'lowered' should be a jax.stages.Lowered, got {_type_name(lowered)}")
    else:
        text = _ask(lambda: lowered.as_text())
        again = _ask(lambda: lowered.compile())  # in the student's kernel, from this lowered program
        if again is None or not callable(again):
            problems.append("'lowered' could not be compiled: lower fn itself, for the shapes and dtypes of args")
        else:
            problems += run_compiled(reading, again, ins, rng, what="'lowered' (compiled)")

    stablehlo = result["stablehlo"]
    if type(stablehlo) is not str or not stablehlo.strip():
        problems.append("'stablehlo' should be the lowered program's text (Lowered.as_text())")
    elif type(text) is str and stablehlo.strip() != text.strip():
        problems.append("'stablehlo' is not the text of this lowered program (Lowered.as_text())")

    compiled = result["compiled"]
    if not isinstance(compiled, jax.stages.Compiled):
        problems.append(f"'compiled' should be a jax.stages.Compiled, got {_type_name(compiled)}")
    else:
        problems += run_compiled(reading, compiled, ins, rng)
        try:
            again = estimates_from(compiled)
        except ChannelError:
            raise
        except Exception:  # a crash of estimates_from itself costs its own cell only
            pass
        else:
            given, again = values_of(result["estimates"]), values_of(again)
            if given is None or again is None or not _same(given, again):
                problems.append("'estimates' is not estimates_from(compiled) of the returned compiled program")
    return problems


def values_of(value):
    """A student's answer as plain values (its lists and dicts copied), or None where it holds an object."""
    try:
        return remote.values_only(value)
    except CheckFailed:
        return None


def _same(a, b) -> bool:
    """Plain data equal, dicts and lists compared item by item."""
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(map(repr, a)) == sorted(map(repr, b)) and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        if bool(a == b) and type(a) is type(b):
            return True
        first, second = number(a, finite=False), number(b, finite=False)
        return first is not None and first == second
    except Exception:
        return False


def check_read_program_stages(read_program, estimates_from, rounds: int = 2,
                              rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for _ in range(rounds):
        m, k, n = fresh_matmul_shapes(rng)
        reading = read_watched(read_program, m, k, n, rng, specs=False, reported=False)  # runs are not this cell's
        problems = stage_problems(reading, estimates_from, rng)
        if problems:
            raise CheckFailed("; ".join(problems))


def _read_for(compiled, traces: list) -> list:
    """The shapes a compiled program takes, as it says (its in_avals) when they are shapes the
    workload was traced with, else those of the first trace."""
    said = _ask(lambda: _positional_shapes(compiled.in_avals))
    return said if said in traces else traces[0]


def _positional_shapes(in_avals) -> list:
    """The shapes of ((aval, ...), {kwargs}) or (aval, ...), the forms JAX's in_avals take."""
    if isinstance(in_avals, tuple) and len(in_avals) == 2 and isinstance(in_avals[1], dict):
        in_avals = in_avals[0]
    return [tuple(int(d) for d in aval.shape) for aval in in_avals]


def _product_shapes(shapes_) -> bool:
    return (isinstance(shapes_, list) and len(shapes_) == 2
            and all(isinstance(s, tuple) and len(s) == 2 for s in shapes_)
            and shapes_[0][1] == shapes_[1][0] and all(0 < d <= 1000 for s in shapes_ for d in s))


def not_run_problems(reading: Reading, specs: bool, rng: np.random.Generator) -> list[str]:
    given = "ShapeDtypeStructs (no data)" if specs else "arrays"
    if reading.broken:
        return [reading.broken]
    if reading.raised:
        return [f"read_program, given {given}, raised {reading.raised}"
                + (": read the program from shapes and dtypes alone" if specs else "")]
    if not reading.traces:
        return [f"read_program, given {given}, never traced the workload"]
    runs = max(reading.runs, len(reading.reports))  # an eager call shows twice: the body's call, its report
    if runs:
        return [f"read_program, given {given}, executed the workload {runs} time(s): "
                "read the program, do not run it"]
    compiled = (reading.result or {}).get("compiled")
    if compiled is None or not callable(compiled):
        return [f"read_program, given {given}, returned no compiled program ('compiled') to show what it read"]
    return run_compiled(reading, compiled, _read_for(compiled, reading.traces), rng, values=False)


def check_read_program_not_run(read_program, estimates_from, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    execution_instrument()
    for specs in (False, True):
        m, k, n = fresh_matmul_shapes(rng)
        problems = not_run_problems(read_watched(read_program, m, k, n, rng, specs=specs), specs, rng)
        if problems:
            raise CheckFailed(problems[0])


# --- test_hand_count --------------------------------------------------------------------------
def check_hand_count(matmul_flops_, rng: np.random.Generator | None = None) -> None:
    """The hand count for fresh shapes, and where XLA rewrites the product: values only."""
    rng = rng or np.random.default_rng()
    cases = [(fresh_matmul_shapes(rng, low=2, high=1000), "fresh shapes") for _ in range(3)]
    m, k, n = fresh_matmul_shapes(rng)
    cases += [((m, 1, n), "k = 1"), ((1, k, 1), "m = n = 1")]
    for (m, k, n), what in cases:
        count = matmul_flops_(m, k, n)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise CheckFailed(f"matmul_flops should return an int, got {type(count).__name__}")
        if count != 2 * m * k * n:
            raise CheckFailed(f"matmul_flops is not 2*m*k*n for a product with {what}"
                              + (": count the product you wrote, not the program XLA built from it"
                                 if "1" in what else ""))
