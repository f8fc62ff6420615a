"""Grade trace counting by measuring it: fresh functions that count their own traces, call
sequences the lesson does not show, and an independent count made beside the student's.

JAX's tracing caches are global and keyed on the function object, so every count here starts
from a function built for it: nothing a notebook ran earlier can be in its cache. No expected
count is written down in advance: the reference count is measured with `jax.jit` on the JAX
that runs the check, so a JAX release that changes a caching rule moves both sides alike, and
no check reads text that JAX changes between versions (log wording, event names, reprs).

A probe is a small function with a counter of its own, which it increments each time its
Python body runs, that is, each time some `jax.jit` traces it. Handing a probe to a student's
`count_traces` therefore shows how many traces really happened during the student's count,
whatever the student's own counter says.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

# What each kind of probe needs from jax.jit: static arguments are always passed by keyword.
JIT_KWARGS = {
    "affine": {},                               # fn(x, scale): shapes, dtypes, weak types, keywords
    "power": {"static_argnames": ("n",)},       # fn(x, n): a Python loop over the static n
    "apply": {"static_argnames": ("act",)},     # fn(x, act): act is a static callable
    "tree": {},                                 # fn(x, act): act is a jax.tree_util.Partial pytree
    "total": {},                                # fn(xs): xs is a list, tuple or dict of arrays
}


def call(*args, **kwargs) -> tuple[tuple, dict]:
    """One call of a sequence: its positional and keyword arguments."""
    return args, kwargs


def _scaled(x, factor):
    return x * factor


def _shifted(x, offset):
    return x + offset


@dataclass
class Probe:
    """A fresh function that counts the times its body runs (its traces, under jax.jit)."""
    kind: str
    fn: Callable = None
    traces: int = 0

    @property
    def jit_kwargs(self) -> dict:
        return dict(JIT_KWARGS[self.kind])


def probe(kind: str) -> Probe:
    """A function JAX has never seen, of one of the kinds in JIT_KWARGS."""
    box = Probe(kind)
    if kind == "affine":
        def fn(x, scale):
            box.traces += 1
            return x * scale + 1
    elif kind == "power":
        def fn(x, n):
            box.traces += 1
            result = jnp.ones_like(x)
            for _ in range(n):  # needs n's value: n must be static
                result = result * x
            return result
    elif kind in ("apply", "tree"):
        def fn(x, act):
            box.traces += 1
            return act(x)
    elif kind == "total":
        def fn(xs):
            box.traces += 1
            return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(xs))
    else:
        raise ValueError(f"unknown probe kind {kind!r}")
    box.fn = fn
    return box


@dataclass
class Sequence:
    kind: str
    calls: list
    label: str
    jit_kwargs: dict = field(default_factory=dict)

    def __post_init__(self):
        self.jit_kwargs = dict(JIT_KWARGS[self.kind])


def run(jitted, calls) -> list:
    """Make every call in order and wait for each result."""
    return [jax.block_until_ready(jitted(*args, **kwargs)) for args, kwargs in calls]


def reference_count(sequence: Sequence) -> int:
    """The independent count: a fresh probe under a plain jax.jit, called in order."""
    box = probe(sequence.kind)
    run(jax.jit(box.fn, **sequence.jit_kwargs), sequence.calls)
    return box.traces


# ---------------------------------------------------------------------------------------------
# Call sequences the lesson does not show, drawn at random for every check.

_DTYPES = (np.float32, np.int32, np.float16)


def _shapes(rng, count: int) -> list[tuple]:
    """`count` distinct small shapes."""
    shapes = []
    while len(shapes) < count:
        rank = int(rng.integers(1, 3))
        shape = tuple(int(d) for d in rng.integers(2, 7, size=rank))
        if shape not in shapes:
            shapes.append(shape)
    return shapes


def _array(rng, shape, dtype):
    return jnp.asarray((rng.standard_normal(shape) * 3).astype(dtype))


def _draw(rng, variants: list, length: int) -> list:
    """`length` calls drawn from `variants` (each a function making one fresh call), with a repeat."""
    picks = [int(i) for i in rng.integers(0, len(variants), size=length - 1)]
    picks.insert(int(rng.integers(0, length)), picks[int(rng.integers(0, len(picks)))])
    return [variants[i]() for i in picks]


def _affine_variants(rng) -> list:
    (a, b), (d1, d2) = _shapes(rng, 2), rng.choice(len(_DTYPES), size=2, replace=False)
    xa, xb = _array(rng, a, _DTYPES[d1]), _array(rng, b, _DTYPES[d1])
    xc = _array(rng, a, _DTYPES[d2])
    value = lambda: float(np.round(rng.uniform(0.5, 4.0), 3))  # noqa: E731
    return [
        lambda: call(xa, value()),                              # weak float32 scalar
        lambda: call(xa, scale=value()),                        # the same, by keyword
        lambda: call(xa, int(rng.integers(2, 9))),              # weak int32 scalar
        lambda: call(xa, np.float32(value())),                  # strong float32 scalar
        lambda: call(xa, jnp.asarray(value())),                 # a weakly typed JAX scalar
        lambda: call(xa, jnp.asarray(value(), jnp.float32)),    # a strongly typed JAX scalar
        lambda: call(xb, value()),                              # another shape
        lambda: call(xc, value()),                              # another dtype
        lambda: call(np.asarray(xa), value()),                  # a NumPy array of the same type
    ]


def _power_variants(rng) -> list:
    a, b = _shapes(rng, 2)
    xa, xb = _array(rng, a, np.float32), _array(rng, b, np.float32)
    n1, n2, n3 = (int(n) for n in rng.choice(np.arange(0, 6), size=3, replace=False))
    return [lambda: call(xa, n=n1), lambda: call(xa, n=n2), lambda: call(xb, n=n1),
            lambda: call(xa, n=n3)]


def _apply_variants(rng) -> list:
    x = _array(rng, _shapes(rng, 1)[0], np.float32)
    factor = float(np.round(rng.uniform(0.5, 4.0), 3))
    kept = functools.partial(_scaled, factor=factor)  # one object, reused
    return [
        lambda: call(x, act=kept),
        lambda: call(x, act=functools.partial(_scaled, factor=factor)),  # equal meaning, new object
        lambda: call(x, act=jnp.negative),
        lambda: call(x, act=lambda v: v * factor),                         # a new lambda each call
    ]


def _tree_variants(rng) -> list:
    x = _array(rng, _shapes(rng, 1)[0], np.float32)
    value = lambda: float(np.round(rng.uniform(0.5, 4.0), 3))  # noqa: E731
    Partial = jax.tree_util.Partial
    return [
        lambda: call(x, Partial(_scaled, factor=value())),              # weak leaf: same key each time
        lambda: call(x, Partial(_scaled, factor=np.float32(value()))),  # a strong leaf
        lambda: call(x, Partial(_shifted, offset=value())),             # another function
        lambda: call(x, Partial(_scaled, value())),                      # bound by position
    ]


def _total_variants(rng) -> list:
    a, b = _shapes(rng, 2)
    u, v, w = _array(rng, a, np.float32), _array(rng, a, np.float32), _array(rng, b, np.float32)
    return [
        lambda: call([u, v]), lambda: call((u, v)), lambda: call([u, v, u]),
        lambda: call({"a": u, "b": v}), lambda: call({"a": u, "c": v}), lambda: call([u, w]),
    ]


VARIANTS = {"affine": _affine_variants, "power": _power_variants, "apply": _apply_variants,
            "tree": _tree_variants, "total": _total_variants}


def random_sequence(rng, kind: str, length: int = 6) -> Sequence:
    variants = VARIANTS[kind](rng)
    calls = _draw(rng, variants, length)
    return Sequence(kind, calls, f"a random {kind} sequence of {length} calls")


def weak_type_sequences(rng) -> list[Sequence]:
    """Python scalars next to arrays of the same dtype: different keys, whatever the values."""
    x = _array(rng, _shapes(rng, 1)[0], np.float32)
    v = float(np.round(rng.uniform(0.5, 4.0), 3))
    k = int(rng.integers(2, 9))
    return [
        Sequence("affine", [call(x, v), call(x, jnp.float32(v)), call(x, v + 1.0)],
                 "a Python float, then a float32 scalar of the same value"),
        Sequence("affine", [call(x, np.int32(k)), call(x, k), call(x, np.int32(k + 1))],
                 "an int32 scalar, then a Python int of the same value"),
    ]


def hidden_sequences(rng) -> list[Sequence]:
    return weak_type_sequences(rng) + [random_sequence(rng, kind) for kind in VARIANTS]


# ---------------------------------------------------------------------------------------------
# The audits: each returns the problems it found, as sentences for the student; [] is a pass.

def _fault(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def _whole_number(answer) -> int | None:
    if isinstance(answer, bool):
        return None
    try:
        return operator.index(answer)
    except TypeError:
        return None


def audit_counted_jit(counted_jit, rng=None) -> list[str]:
    """Is `counted_jit(fn, **jit_kwargs)` a jitted fn whose fresh counter counts its traces?"""
    rng = rng if rng is not None else np.random.default_rng()
    box = probe("affine")
    try:
        jitted, counter = counted_jit(box.fn)
    except Exception as exc:  # noqa: BLE001 (any failure is the student's to see)
        return [f"counted_jit(fn) should return (jitted, counter); it failed with {_fault(exc)}"]
    if not isinstance(counter, dict) or counter.get("traces") != 0:
        return [f"counted_jit must return a fresh counter reading {{'traces': 0}}, got {counter!r}"]
    problems = []
    if not callable(getattr(jitted, "lower", None)):
        problems.append("the counted function is not compiled with jax.jit (it has no .lower)")

    x = _array(rng, _shapes(rng, 1)[0], np.float32)
    scale = float(np.round(rng.uniform(0.5, 4.0), 3))
    try:
        outputs = run(jitted, [call(x, scale)] * 3)
    except Exception as exc:  # noqa: BLE001
        return problems + [f"calling the counted function failed with {_fault(exc)}"]
    if counter["traces"] != box.traces or box.traces != 1:
        problems.append(f"three identical calls: the counter says {counter['traces']}, JAX traced "
                        f"the function {box.traces} time(s); count traces, not calls")
    expected = np.asarray(x) * np.float32(scale) + 1
    if not all(np.allclose(np.asarray(out), expected, rtol=1e-6) for out in outputs):
        problems.append("the counted function must return what fn returns")

    sequence = random_sequence(rng, "affine")
    box = probe("affine")
    jitted, counter = counted_jit(box.fn)
    run(jitted, sequence.calls)
    reference = reference_count(sequence)
    if not counter["traces"] == box.traces == reference:
        problems.append(f"{sequence.label}: the counter says {counter['traces']}, JAX traced the "
                        f"function {box.traces} time(s), a fresh jax.jit traces it {reference} time(s)")

    again, second = counted_jit(box.fn)
    before = counter["traces"]
    run(again, sequence.calls[:1])
    if second is counter or second.get("traces") != 1 or counter["traces"] != before:
        problems.append("a second counted_jit(fn) needs its own jitted function and its own counter, "
                        f"starting from zero (after one call it reads {second.get('traces')!r}, "
                        f"the first counter moved from {before} to {counter['traces']})")

    sequence = random_sequence(rng, "power", length=5)
    box = probe("power")
    try:
        jitted, counter = counted_jit(box.fn, static_argnames=("n",))
        run(jitted, sequence.calls)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"counted_jit(fn, static_argnames=('n',)) failed with {_fault(exc)}: "
                        "pass jax.jit's keyword arguments on to it")
    else:
        reference = reference_count(sequence)
        if not counter["traces"] == box.traces == reference:
            problems.append(f"with static_argnames=('n',), {sequence.label}: the counter says "
                            f"{counter['traces']}, a fresh jax.jit traces it {reference} time(s)")
    return problems


def audit_count_traces(count_traces, rng=None) -> list[str]:
    """Does `count_traces(fn, calls, **jit_kwargs)` measure what a fresh jax.jit does?"""
    rng = rng if rng is not None else np.random.default_rng()
    problems = []
    for sequence in hidden_sequences(rng):
        box = probe(sequence.kind)
        try:
            answer = count_traces(box.fn, sequence.calls, **sequence.jit_kwargs)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{sequence.label}: count_traces failed with {_fault(exc)}")
            continue
        reference = reference_count(sequence)
        if _whole_number(answer) is None:
            problems.append(f"{sequence.label}: count_traces must return an int, got {answer!r}")
        elif not answer == box.traces == reference:
            hint = " (measure, do not predict)" if answer != box.traces else ""
            problems.append(f"{sequence.label}: count_traces answered {answer}; JAX traced the "
                            f"function {box.traces} time(s) while it ran{hint}, and a fresh "
                            f"jax.jit traces it {reference} time(s)")
    return problems


def audit_isolation(count_traces, rng=None) -> list[str]:
    """Does a count depend only on its own sequence, not on counts made before it?"""
    rng = rng if rng is not None else np.random.default_rng()
    box = probe("affine")
    first, other = random_sequence(rng, "affine"), random_sequence(rng, "affine")
    try:
        answers = [count_traces(box.fn, first.calls)]
        answers.append(count_traces(box.fn, first.calls))
        count_traces(box.fn, other.calls)
        answers.append(count_traces(box.fn, first.calls))
        answers.append(count_traces(probe("affine").fn, first.calls))
    except Exception as exc:  # noqa: BLE001
        return [f"count_traces failed with {_fault(exc)}"]
    if len(set(answers)) != 1:
        return [f"the same sequence counted four times (twice in a row, again after another "
                f"sequence, then with a new function) gave {answers}: each count must start "
                "from a function JAX has never traced and a counter at zero"]
    return []
