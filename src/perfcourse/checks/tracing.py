"""Grade trace and compile counting by measuring them: fresh functions that count their own traces,
call sequences the lesson does not show, and an independent count made here, beside the student's.

Grade cells run in the trusted kernel; the student's `counted_jit` and `count_traces` live in the
student's kernel. So the sequences are picked here, at grading time, as plain descriptions (the
kind of function, each call's arguments as specs: fresh shapes, dtypes, NumPy or JAX, Python or
array scalars, static values, partials; see `perfcourse.kernel.probes.tracing`), and a probe in
the student's kernel builds the real functions and arguments from them, runs the student's
function and reports numbers: the student's answers and counter readings, and how many times
each function's body ran meanwhile. The reference count is made HERE, from the same description,
with this kernel's own copy of the builder and a plain `jax.jit`; nothing the student's process
says is taken for a verdict.

JAX's tracing caches are global and keyed on the function object, so every count starts from a
function built for it: nothing a notebook ran earlier can be in its cache. No expected count is
written down in advance: the reference count is measured with `jax.jit` on the JAX that runs the
check (the same installation as the student's kernel when grading), so a JAX release that changes
a caching rule moves both sides alike, and no check reads text that JAX changes between versions
(log wording, event names, reprs).

Each function handed to the student's code increments a counter of its own each time its Python
body runs, that is, each time some `jax.jit` traces it: that shows how many traces really
happened during the student's count, whatever the student's own counter says.

Compiles are not traces. JAX keeps two caches: a trace cache keyed on what the Python function
sees (function, pytree, shapes, dtypes, weak types, static values), and a cache of compiled
executables keyed, besides the traced program, on where the arguments live: an argument
committed to a device (`jax.device_put(x, device)`) and the same data left uncommitted are two
compile keys on one device already, and every other device (or sharding) is another. So a call
can hit the trace cache and still compile: traces +0, compiles +1. No Python side effect runs
at compile time, so compiles are observed the only way JAX offers, as `jax.monitoring` events
(`perfcourse.kernel.probes.tracing.CompileEvents`, the one place the event is named). Before it
grades a compile count, `compile_instrument()` checks that the JAX running the check still
reports that event (one for a fresh function's first call, none for its repeat) and stops the
check with an error naming the event if not: a renamed event must show up as a broken lesson,
never as every student's mistake. Grading runs on one device by default; there the compile
sequences commit arrays to device 0, which compiles without a trace as surely as a change of
device does. On several devices (a TPU v5e-8, or the CPU with
`--xla_force_host_platform_device_count=8`) they also move the array to other devices.

What a forger would have to produce (by replacing the probe or faking its report):
- audit_counted_jit: a fresh counter at zero per call, readings equal to the trace count of a plain
  `jax.jit` for a random sequence of fresh shapes, dtypes, weak and strong scalars and keyword
  forms, and for a static argument, plus the function's real outputs for arrays picked here
  (x * scale + 1 on values it has not seen before grading): in practice, tracing under jax.jit
  with a counter inside, which is the task.
- audit_count_traces: for eight sequences drawn at grading time (weak against strong scalars,
  NumPy against JAX arguments of one type, new static values, partials, pytrees), the exact number
  of traces a fresh `jax.jit` makes; predicting it means implementing JAX's cache key, weak types
  included, which is the mistake the lesson warns about; measuring it is the task.
- audit_isolation: the same answer for one sequence counted again after other counts and with a
  new function: a count that starts from a function JAX has never traced.
- audit_count_traces_and_compiles: for sequences drawn at grading time that commit the same data
  to devices (and move it between devices where there are several), change shapes, scalars'
  weak types and static values, both numbers a fresh `jax.jit` produces: traces, and compiles,
  which exceed the traces whenever a placement changes; predicting them means implementing
  JAX's compile key, device placement included; measuring them is the task.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

import jax
import numpy as np

from ..kernel.probes import tracing as builder
from ..kernel.probes.tracing import Box
from . import InstrumentMissing, remote
from .student_calls import said

# What each kind of function needs from jax.jit: static arguments are always passed by keyword.
JIT_KWARGS = {
    "affine": {},                               # fn(x, scale): shapes, dtypes, weak types, keywords
    "power": {"static_argnames": ("n",)},       # fn(x, n): a Python loop over the static n
    "apply": {"static_argnames": ("act",)},     # fn(x, act): act is a static callable
    "tree": {},                                 # fn(x, act): act is a jax.tree_util.Partial pytree
    "total": {},                                # fn(xs): xs is a list, tuple or dict of arrays
}


# --- specs: the plain descriptions of arguments that cross to the student's kernel ----------

def call(*args, **kwargs) -> tuple[tuple, dict]:
    """One call of a sequence: its positional and keyword arguments (specs)."""
    return args, kwargs


def py(value) -> dict:
    return {"t": "py", "v": value}


def np_scalar(value, dtype: str = "float32") -> dict:
    return {"t": "np", "v": value, "dtype": dtype}


def jnp_scalar(value, dtype: str | None = None) -> dict:
    return {"t": "jnp", "v": value, "dtype": dtype}


def array(data: np.ndarray, numpy: bool = False, device: int | None = None) -> dict:
    """An array argument: a JAX array (uncommitted), a NumPy array, or (device=k) a JAX array
    committed to jax.devices()[k]."""
    spec = {"t": "array", "data": np.asarray(data), "numpy": numpy}
    if device is not None:
        spec["device"] = int(device)
    return spec


def partial(fn: str, *args, tree: bool = False, share: str | None = None, **kwargs) -> dict:
    return {"t": "partial", "fn": fn, "args": list(args), "kwargs": kwargs, "tree": tree, "share": share}


def lam(factor: float) -> dict:
    return {"t": "lambda", "factor": factor}


NEGATIVE = {"t": "negative"}


def items(kind: str, values) -> dict:
    return {"t": kind, "items": values}


@dataclass
class Sequence:
    kind: str
    calls: list           # (arg specs, keyword specs) pairs
    label: str
    jit_kwargs: dict = field(default_factory=dict)

    def __post_init__(self):
        self.jit_kwargs = dict(JIT_KWARGS[self.kind])

    def description(self) -> dict:
        return {"kind": self.kind, "jit_kwargs": dict(self.jit_kwargs),
                "calls": [[list(args), dict(kwargs)] for args, kwargs in self.calls]}

    def build(self) -> list:
        """The calls as real (args, kwargs), built in this process."""
        return builder.calls(self.description())

    def head(self, count: int) -> "Sequence":
        return Sequence(self.kind, self.calls[:count], f"the first {count} call(s) of {self.label}")


def run(jitted, calls) -> list:
    """Make every call in order and wait for each result."""
    return [jax.block_until_ready(jitted(*args, **kwargs)) for args, kwargs in calls]


def reference_count(sequence: Sequence) -> int:
    """The independent count, made in this process: a fresh function under a plain jax.jit."""
    box = Box(sequence.kind)
    run(jax.jit(box.fn, **sequence.jit_kwargs), sequence.build())
    return box.traces


def compile_instrument() -> None:
    """Check that this JAX reports one compile event for a fresh function's first call and none for
    its repeat; raise InstrumentMissing if not."""
    box = Box("affine")
    jitted, x = jax.jit(box.fn), jax.numpy.arange(3, dtype=np.float32)
    with builder.CompileEvents() as first:
        jax.block_until_ready(jitted(x, 2.0))
    with builder.CompileEvents() as repeat:
        jax.block_until_ready(jitted(x, 3.0))
    if (first.count, repeat.count) != (1, 0):
        raise InstrumentMissing(
            f"jax {jax.__version__} reported {first.count} and {repeat.count} compile event(s) named "
            f"{builder.COMPILE_EVENT!r} for a fresh function's first and second call (expected 1 and 0): "
            "the lesson's compile count cannot be graded on this JAX; update the event name")


def reference_counts(sequence: Sequence) -> tuple[int, int]:
    """Traces and compiles of a fresh function under a plain jax.jit, counted in this process."""
    box = Box(sequence.kind)
    jitted, made = jax.jit(box.fn, **sequence.jit_kwargs), sequence.build()
    with builder.CompileEvents() as seen:
        run(jitted, made)
    return box.traces, seen.count


# ---------------------------------------------------------------------------------------------
# Call sequences the lesson does not show, drawn at random for every check.

_DTYPES = ("float32", "int32", "float16")


def _shapes(rng, count: int) -> list[tuple]:
    """`count` distinct small shapes."""
    shapes = []
    while len(shapes) < count:
        rank = int(rng.integers(1, 3))
        shape = tuple(int(d) for d in rng.integers(2, 7, size=rank))
        if shape not in shapes:
            shapes.append(shape)
    return shapes


def _data(rng, shape, dtype: str = "float32") -> np.ndarray:
    return (rng.standard_normal(shape) * 3).astype(dtype)


def _value(rng) -> float:
    return float(np.round(rng.uniform(0.5, 4.0), 3))


def _draw(rng, variants: list, length: int) -> list:
    """`length` calls drawn from `variants` (each a function making one fresh call), with a repeat."""
    picks = [int(i) for i in rng.integers(0, len(variants), size=length - 1)]
    picks.insert(int(rng.integers(0, length)), picks[int(rng.integers(0, len(picks)))])
    return [variants[i]() for i in picks]


def _affine_variants(rng) -> list:
    (a, b), (d1, d2) = _shapes(rng, 2), rng.choice(len(_DTYPES), size=2, replace=False)
    xa, xb = _data(rng, a, _DTYPES[d1]), _data(rng, b, _DTYPES[d1])
    xc = _data(rng, a, _DTYPES[d2])
    return [
        lambda: call(array(xa), py(_value(rng))),                         # weak float32 scalar
        lambda: call(array(xa), scale=py(_value(rng))),                   # the same, by keyword
        lambda: call(array(xa), py(int(rng.integers(2, 9)))),             # weak int32 scalar
        lambda: call(array(xa), np_scalar(_value(rng))),                  # strong float32 scalar
        lambda: call(array(xa), jnp_scalar(_value(rng))),                 # a weakly typed JAX scalar
        lambda: call(array(xa), jnp_scalar(_value(rng), "float32")),      # a strongly typed JAX scalar
        lambda: call(array(xb), py(_value(rng))),                         # another shape
        lambda: call(array(xc), py(_value(rng))),                         # another dtype
        lambda: call(array(xa, numpy=True), py(_value(rng))),             # a NumPy array of the same type
    ]


def _power_variants(rng) -> list:
    a, b = _shapes(rng, 2)
    xa, xb = _data(rng, a), _data(rng, b)
    n1, n2, n3 = (int(n) for n in rng.choice(np.arange(0, 6), size=3, replace=False))
    return [lambda: call(array(xa), n=py(n1)), lambda: call(array(xa), n=py(n2)),
            lambda: call(array(xb), n=py(n1)), lambda: call(array(xa), n=py(n3))]


def _apply_variants(rng) -> list:
    x = _data(rng, _shapes(rng, 1)[0])
    factor = _value(rng)
    return [
        lambda: call(array(x), act=partial("scaled", factor=py(factor), share="kept")),  # one object, reused
        lambda: call(array(x), act=partial("scaled", factor=py(factor))),  # equal meaning, new object
        lambda: call(array(x), act=NEGATIVE),
        lambda: call(array(x), act=lam(factor)),                            # a new lambda each call
    ]


def _tree_variants(rng) -> list:
    x = _data(rng, _shapes(rng, 1)[0])
    return [
        lambda: call(array(x), partial("scaled", factor=py(_value(rng)), tree=True)),   # weak leaf: one key
        lambda: call(array(x), partial("scaled", factor=np_scalar(_value(rng)), tree=True)),  # a strong leaf
        lambda: call(array(x), partial("shifted", offset=py(_value(rng)), tree=True)),  # another function
        lambda: call(array(x), partial("scaled", py(_value(rng)), tree=True)),          # bound by position
    ]


def _total_variants(rng) -> list:
    a, b = _shapes(rng, 2)
    u, v, w = (array(_data(rng, shape)) for shape in (a, a, b))
    return [
        lambda: call(items("list", [u, v])), lambda: call(items("tuple", [u, v])),
        lambda: call(items("list", [u, v, u])), lambda: call(items("dict", {"a": u, "b": v})),
        lambda: call(items("dict", {"a": u, "c": v})), lambda: call(items("list", [u, w])),
    ]


VARIANTS = {"affine": _affine_variants, "power": _power_variants, "apply": _apply_variants,
            "tree": _tree_variants, "total": _total_variants}


def random_sequence(rng, kind: str, length: int = 6) -> Sequence:
    variants = VARIANTS[kind](rng)
    calls = _draw(rng, variants, length)
    return Sequence(kind, calls, f"a random {kind} sequence of {length} calls")


def weak_type_sequences(rng) -> list[Sequence]:
    """Python scalars next to arrays of the same dtype: different keys, whatever the values."""
    x = array(_data(rng, _shapes(rng, 1)[0]))
    v = _value(rng)
    k = int(rng.integers(2, 9))
    return [
        Sequence("affine", [call(x, py(v)), call(x, jnp_scalar(v, "float32")), call(x, py(v + 1.0))],
                 "a Python float, then a float32 scalar of the same value"),
        Sequence("affine", [call(x, np_scalar(k, "int32")), call(x, py(k)), call(x, np_scalar(k + 1, "int32"))],
                 "an int32 scalar, then a Python int of the same value"),
    ]


def numpy_sequence(rng) -> Sequence:
    """NumPy arguments where JAX ones of the same type were: one key for both (a trace is not a
    dispatch-cache entry), then a Python float: another key."""
    data = _data(rng, _shapes(rng, 1)[0])
    v = _value(rng)
    return Sequence("affine", [call(array(data), jnp_scalar(v, "float32")),
                               call(array(data, numpy=True), np_scalar(_value(rng))),
                               call(array(data), py(v))],
                    "a NumPy array and scalar where JAX ones of the same type were, then a Python float")


def hidden_sequences(rng) -> list[Sequence]:
    return weak_type_sequences(rng) + [numpy_sequence(rng)] + [random_sequence(rng, kind) for kind in VARIANTS]


# Sequences for counting compiles apart from traces: the same data left uncommitted, committed to a
# device, moved to other devices where there are several.

def placement_sequence(rng, devices: int) -> Sequence:
    """Uncommitted and committed calls of one array (with weak and strong scalars): more compiles
    than traces on any number of devices."""
    data = _data(rng, _shapes(rng, 1)[0])
    k = int(rng.integers(0, devices))
    variants = [
        lambda: call(array(data), py(_value(rng))),                            # uncommitted
        lambda: call(array(data, numpy=True), py(_value(rng))),                # a NumPy array: uncommitted too
        lambda: call(array(data, device=k), py(_value(rng))),                  # the same data, committed
        lambda: call(array(data, device=k), np_scalar(_value(rng))),           # committed, a strong scalar
        lambda: call(array(data), jnp_scalar(_value(rng), "float32")),         # uncommitted, a strong scalar
    ]
    calls = [variants[0](), variants[2]()] + _draw(rng, variants, 4)
    order = rng.permutation(len(calls))
    return Sequence("affine", [calls[int(i)] for i in order],
                    "one array, left uncommitted and committed to a device, with weak and strong scalars")


def device_sequence(rng, devices: int) -> Sequence:
    """The same array on several devices: one trace, a compile per placement."""
    data = _data(rng, _shapes(rng, 1)[0])
    ks = [int(k) for k in rng.choice(devices, size=min(3, devices), replace=False)]
    calls = [call(array(data, device=k), py(_value(rng))) for k in ks]
    calls += [call(array(data, device=ks[int(rng.integers(0, len(ks)))]), py(_value(rng))),
              call(array(data), py(_value(rng)))]
    return Sequence("affine", calls, "one array moved between devices, then left uncommitted")


def static_placement_sequence(rng, devices: int) -> Sequence:
    """A static argument and a committed array: new static values trace, new placements compile."""
    data = _data(rng, _shapes(rng, 1)[0])
    k = int(rng.integers(0, devices))
    # n >= 1: with n = 0 the array is unused, and JAX compiles a program that ignores where it lives.
    n1, n2 = (int(n) for n in rng.choice(np.arange(1, 6), size=2, replace=False))
    calls = [call(array(data, device=k), n=py(n1)), call(array(data), n=py(n1)),
             call(array(data, device=k), n=py(n2)), call(array(data, device=k), n=py(n1))]
    return Sequence("power", calls, "a static argument with a committed and an uncommitted array")


def compile_sequences(rng, devices: int | None = None) -> list[Sequence]:
    """Sequences whose compiles a count must tell apart from traces, and one where they agree."""
    devices = devices if devices is not None else jax.device_count()
    sequences = [placement_sequence(rng, devices), static_placement_sequence(rng, devices)]
    if devices > 1:
        sequences.append(device_sequence(rng, devices))
    sequences.append(random_sequence(rng, str(rng.choice(["affine", "total"]))))
    return sequences


# ---------------------------------------------------------------------------------------------
# Reading what the student's kernel reported: untrusted values, checked for kind here.

def _text(value) -> str:
    return value[:300] if type(value) is str else "an error"


def _whole_number(answer) -> int | None:
    """An int, a NumPy integer or a 0-d integer array, as an int; None for anything else."""
    kind = type(answer)
    if kind is bool or not issubclass(kind, (int, np.integer, np.ndarray, jax.Array)):
        return None
    try:
        return operator.index(answer)
    except TypeError:
        return None


def _shown(value) -> str:
    kind = type(value)
    if kind in (int, float, str, bool, type(None)) or issubclass(kind, (np.generic, np.ndarray, jax.Array)):
        return f"{type(value).__name__} {value}"[:80]
    if isinstance(value, (list, dict)):
        return f"a {'list' if isinstance(value, list) else 'dict'}"
    if kind is remote.Remote:
        return f"an object of type {object.__getattribute__(value, '_info').get('type', '?')}"
    return f"an object of type {kind.__name__}"


class Malformed(Exception):
    """The student's kernel reported something that is not what the probe returns."""


def _report(value, steps: int) -> list[tuple]:
    if type(value) is not tuple or len(value) != steps or not all(
            type(r) is tuple and r and type(r[0]) is str and r[0] in ("answer", "made", "ran", "error") for r in value):
        raise Malformed("the student's kernel sent back a report that is not the probe's")
    return list(value)


def _probe(name: str, student_function, steps: list) -> list[tuple]:
    return _report(remote.probe(name, student_function, steps), len(steps))


# ---------------------------------------------------------------------------------------------
# The audits: each returns the problems it found, as sentences for the student; [] is a pass.

def _made(result) -> dict | str:
    """A "made" result as a dict, or the error text."""
    if result[0] == "error":
        return _text(result[1] if len(result) > 1 else None)
    if result[0] != "made" or len(result) != 6:
        raise Malformed("a malformed report of counted_jit")
    _, is_dict, reading, has_lower, shares, shown = result
    return {"is_dict": is_dict is True, "reading": _whole_number(reading), "has_lower": has_lower is True,
            "shares": tuple(s for s in shares if type(s) is str) if type(shares) is tuple else (),
            "shown": _text(shown)}


def _ran(result) -> dict | str:
    if result[0] == "error":
        return _text(result[1] if len(result) > 1 else None)
    if result[0] != "ran" or len(result) != 4 or not all(type(part) is tuple for part in result[1:]):
        raise Malformed("a malformed report of a counted function's calls")
    _, outputs, readings, traces = result
    pairs = lambda found: {p[0]: _whole_number(p[1]) for p in found  # noqa: E731
                           if type(p) is tuple and len(p) == 2 and type(p[0]) is str}
    return {"outputs": outputs, "readings": pairs(readings), "traces": pairs(traces)}


def audit_counted_jit(counted_jit, rng=None) -> list[str]:
    """Is `counted_jit(fn, **jit_kwargs)` a jitted fn whose fresh counter counts its traces?"""
    rng = rng if rng is not None else np.random.default_rng()
    data = _data(rng, _shapes(rng, 1)[0])
    scale = _value(rng)
    three = Sequence("affine", [call(array(data), py(scale))] * 3, "three identical calls")
    mixed = random_sequence(rng, "affine")
    power = random_sequence(rng, "power", length=5)
    steps = [
        {"make": "one", "function": "one", "kind": "affine", "jit_kwargs": {}},
        {"run": "one", "sequence": three.description(), "outputs": True},
        {"make": "mixed", "function": "mixed", "kind": "affine", "jit_kwargs": {}},
        {"run": "mixed", "sequence": mixed.description()},
        {"make": "again", "function": "mixed", "kind": "affine", "jit_kwargs": {}},  # the same fn again
        {"run": "again", "sequence": mixed.head(1).description()},
        {"make": "power", "function": "power", "kind": "power", "jit_kwargs": {"static_argnames": ("n",)}},
        {"run": "power", "sequence": power.description()},
    ]
    try:
        report = _probe("tracing.counted_jit", counted_jit, steps)
        return _judge_counted_jit(report, data, scale, mixed, power)
    except Malformed as exc:
        return [str(exc)]
    except Exception as exc:  # noqa: BLE001 (the student's kernel failed to answer)
        return [f"counted_jit could not be run: {said(exc)}"]


def _judge_counted_jit(report, data, scale, mixed, power) -> list[str]:
    one = _made(report[0])
    if isinstance(one, str):
        return [f"counted_jit(fn) should return (jitted, counter); it failed with {one}"]
    if not one["is_dict"] or one["reading"] != 0:
        return [f"counted_jit must return a fresh counter reading {{'traces': 0}}, got {one['shown']}"]
    problems = []
    if not one["has_lower"]:
        problems.append("the counted function is not compiled with jax.jit (it is not what jax.jit returns)")

    ran = _ran(report[1])
    if isinstance(ran, str):
        return problems + [f"calling the counted function failed with {ran}"]
    counted, traced = ran["readings"].get("one"), ran["traces"].get("one")
    if counted != traced or traced != 1:
        problems.append(f"three identical calls: the counter says {counted}, JAX traced "
                        f"the function {traced} time(s); count traces, not calls")
    expected = data * np.float32(scale) + 1
    outputs = ran["outputs"]
    if len(outputs) != 3 or not all(issubclass(type(out), (np.ndarray, jax.Array))
                                    and np.shape(out) == expected.shape
                                    and np.allclose(np.asarray(out), expected, rtol=1e-6, atol=1e-6)
                                    for out in outputs):
        problems.append("the counted function must return what fn returns")

    made, ran = _made(report[2]), _ran(report[3])
    if isinstance(made, str) or isinstance(ran, str):
        problems.append(f"{mixed.label}: counted_jit or its counted function failed with "
                        f"{made if isinstance(made, str) else ran}")
    else:
        reference = reference_count(mixed)
        counted, traced = ran["readings"].get("mixed"), ran["traces"].get("mixed")
        if not counted == traced == reference:
            problems.append(f"{mixed.label}: the counter says {counted}, JAX traced the "
                            f"function {traced} time(s), a fresh jax.jit traces it {reference} time(s)")
        before = counted
        again, ran = _made(report[4]), _ran(report[5])
        if isinstance(again, str) or isinstance(ran, str):
            problems.append("a second counted_jit(fn) failed with "
                            f"{again if isinstance(again, str) else ran}")
        else:
            second, after = ran["readings"].get("again"), ran["readings"].get("mixed")
            if "mixed" in again["shares"] or second != 1 or after != before:
                problems.append("a second counted_jit(fn) needs its own jitted function and its own counter, "
                                f"starting from zero (after one call it reads {second!r}, "
                                f"the first counter moved from {before} to {after})")

    made, ran = _made(report[6]), _ran(report[7])
    if isinstance(made, str) or isinstance(ran, str):
        problems.append(f"counted_jit(fn, static_argnames=('n',)) failed with "
                        f"{made if isinstance(made, str) else ran}: pass jax.jit's keyword arguments on to it")
    else:
        reference = reference_count(power)
        counted, traced = ran["readings"].get("power"), ran["traces"].get("power")
        if not counted == traced == reference:
            problems.append(f"with static_argnames=('n',), {power.label}: the counter says "
                            f"{counted}, a fresh jax.jit traces it {reference} time(s)")
    return problems


def audit_count_traces(count_traces, rng=None) -> list[str]:
    """Does `count_traces(fn, calls, **jit_kwargs)` measure what a fresh jax.jit does?"""
    rng = rng if rng is not None else np.random.default_rng()
    sequences = hidden_sequences(rng)
    steps = [{"function": f"fn{i}", "sequence": s.description()} for i, s in enumerate(sequences)]
    try:
        report = _probe("tracing.count_traces", count_traces, steps)
    except Malformed as exc:
        return [str(exc)]
    except Exception as exc:  # noqa: BLE001
        return [f"count_traces could not be run: {said(exc)}"]
    problems = []
    for sequence, result in zip(sequences, report):
        if result[0] != "answer" or len(result) != 3:
            fault = _text(result[1] if len(result) > 1 else None)
            problems.append(f"{sequence.label}: count_traces failed with {fault}")
            continue
        _, answer, traces = result
        reference = reference_count(sequence)
        number, traced = _whole_number(answer), _whole_number(traces)
        if number is None:
            problems.append(f"{sequence.label}: count_traces must return an int, got {_shown(answer)}")
        elif not number == traced == reference:
            hint = " (measure, do not predict)" if number != traced else ""
            problems.append(f"{sequence.label}: count_traces answered {number}; JAX traced the "
                            f"function {traced} time(s) while it ran{hint}, and a fresh "
                            f"jax.jit traces it {reference} time(s)")
    return problems


def audit_isolation(count_traces, rng=None) -> list[str]:
    """Does a count depend only on its own sequence, not on counts made before it?"""
    rng = rng if rng is not None else np.random.default_rng()
    first, other = random_sequence(rng, "affine"), random_sequence(rng, "affine")
    steps = [{"function": "same", "sequence": s.description()} for s in (first, first, other, first)]
    steps.append({"function": "new", "sequence": first.description()})
    try:
        report = _probe("tracing.count_traces", count_traces, steps)
    except Malformed as exc:
        return [str(exc)]
    except Exception as exc:  # noqa: BLE001
        return [f"count_traces could not be run: {said(exc)}"]
    for result in report:
        if result[0] != "answer" or len(result) != 3:
            return [f"count_traces failed with {_text(result[1] if len(result) > 1 else None)}"]
    answers = [report[i][1] for i in (0, 1, 3, 4)]
    comparable = [_whole_number(a) if _whole_number(a) is not None else _shown(a) for a in answers]
    if len(set(comparable)) != 1:
        return [f"the same sequence counted four times (twice in a row, again after another "
                f"sequence, then with a new function) gave {comparable}: each count must start "
                "from a function JAX has never traced and a counter at zero"]
    return []


def _answered_counts(answer) -> dict | str:
    """The probe's reading of a {"traces": T, "compiles": C} answer, or how it falls short."""
    if type(answer) is not tuple or not answer or answer[0] not in ("dict", "other"):
        raise Malformed("the student's kernel sent back a report that is not the probe's")
    if answer[0] == "other" or len(answer) != 4:
        shown = _text(answer[1]) if len(answer) > 1 and answer[0] == "other" else "something else"
        return f"must return a dict {{'traces': T, 'compiles': C}}, got {shown}"
    _, traces, compiles, keys = answer
    numbers = {"traces": _whole_number(traces), "compiles": _whole_number(compiles)}
    missing = " and ".join(f"'{key}'" for key, number in numbers.items() if number is None)
    if missing:
        found = ", ".join(k for k in keys if type(k) is str)[:120] if type(keys) is tuple else ""
        return (f"must return a dict {{'traces': T, 'compiles': C}} of whole numbers; {missing}: missing "
                f"or not a whole number (its keys: {found or 'none'})")
    return numbers


def audit_count_traces_and_compiles(count_traces_and_compiles, rng=None) -> list[str]:
    """Does `count_traces_and_compiles(fn, calls, **jit_kwargs)` count the traces and the compiles a
    fresh jax.jit makes, each apart, starting from a function JAX has never seen?"""
    rng = rng if rng is not None else np.random.default_rng()
    compile_instrument()  # raises InstrumentMissing (not the student's fault) on a JAX without the event
    sequences = compile_sequences(rng)
    # The first sequence once more at the end, with the same function: a count may not depend on
    # what was counted before it.
    steps = [{"function": f"fn{i}", "sequence": s.description()} for i, s in enumerate(sequences)]
    steps.append({"function": "fn0", "sequence": sequences[0].description()})
    labels = [s.label for s in sequences] + [f"{sequences[0].label}, counted again after the others"]
    # Last, a sequence whose final call raises (an argument that is not an array): whatever the
    # function does with the error, no listener of its may stay registered afterwards.
    raising = {"function": "raising", "sequence": sequences[-1].description(), "then_raise": True}
    try:
        report = _probe("tracing.count_traces_and_compiles", count_traces_and_compiles, steps + [raising])
    except Malformed as exc:
        return [str(exc)]
    except Exception as exc:  # noqa: BLE001
        return [f"count_traces_and_compiles could not be run: {said(exc)}"]
    try:
        return _judge_counts(sequences, steps, labels, report[:-1]) or _judge_listeners(report, labels)
    except Malformed as exc:
        return [str(exc)]


def _judge_listeners(report, labels) -> list[str]:
    """Every listener the student's function registered is gone once it returned or raised.

    The count of jax.monitoring duration listeners is read in the student's process before and
    after each call (kernel/probes/tracing.py); None where that JAX does not say."""
    for result, label in zip(report, [*labels, "a sequence whose last call raises"]):
        left = result[-1] if result[0] in ("answer", "error") and len(result) in (3, 5) else None
        if left is not None and (type(left) is not int or left != 0):
            how = "raised" if result[0] == "error" else "returned"
            return [f"{label}: a jax.monitoring listener was still registered after count_traces_and_compiles "
                    f"{how}: unregister it with jax.monitoring.unregister_event_duration_listener in a "
                    "`finally:` block, so a failing call cannot leave it counting someone else's compiles"]
    return []


def _judge_counts(sequences, steps, labels, report) -> list[str]:
    problems, references = [], {}
    for step, label, result in zip(steps, labels, report):
        if result[0] == "error":
            problems.append(f"{label}: count_traces_and_compiles failed with "
                            f"{_text(result[1] if len(result) > 1 else None)}")
            continue
        if result[0] != "answer" or len(result) != 5:
            raise Malformed("the student's kernel sent back a report that is not the probe's")
        _, answer, traced, compiled, _ = result
        counts = _answered_counts(answer)
        if isinstance(counts, str):
            problems.append(f"{label}: count_traces_and_compiles {counts}")
            continue
        sequence = sequences[int(step["function"][2:])]
        if step["function"] not in references:
            references[step["function"]] = reference_counts(sequence)
        traces, compiles = references[step["function"]]
        traced, compiled = _whole_number(traced), _whole_number(compiled)
        if counts == {"traces": traces, "compiles": compiles}:
            continue
        hints = []
        if counts["traces"] != traces and counts["traces"] == compiles != traces:
            hints.append("the traces it reports are the compiles: count traces with a counter in the traced function")
        if counts["compiles"] != compiles and counts["compiles"] == counts["traces"]:
            hints.append("a compile can happen without a trace: count compiles apart from traces")
        elif counts["compiles"] != compiles:
            hints.append("count JAX's compile events while the calls run, from zero, for this count only")
        problems.append(
            f"{label}: count_traces_and_compiles answered {counts['traces']} trace(s) and "
            f"{counts['compiles']} compile(s); while it ran JAX traced the function {traced} time(s) and "
            f"reported {compiled} compile(s); a fresh jax.jit traces it {traces} time(s) and compiles it "
            f"{compiles} time(s)" + (f" ({'; '.join(hints)})" if hints else ""))
    return problems
