"""Grade reading a program's stages without running it: fresh shapes, watched workloads, stand-ins.

performance-03's students write `estimates_from(compiled)`, which turns a compiled program's
`cost_analysis()` and `memory_analysis()` into plain numbers and says which are missing, and
`read_program(fn, *args)`, which traces, lowers and compiles `fn` for the shapes of `args`
without running it. The checks here never read text that JAX prints (jaxprs, StableHLO, reprs):

- shapes come from the stages' abstract values (`in_avals`, `out_avals`, `out_info`);
- a *watched* workload records the shapes it is traced with, and, when asked, carries a
  `jax.debug.callback` that counts executions: tracing, lowering and compiling never fire it;
- *stand-in* compiled objects script what the compiler returns (a dict, a list of dicts,
  `None`, missing keys, an exception) with fresh numbers, so a function that invents zeros,
  crashes on `None`, or copies numbers from elsewhere is caught;
- the flop estimate of an (m, k) @ (k, n) product is compared with the hand count 2*m*k*n.
  Fresh shapes have every dimension in 2..96: XLA rewrites a product with a dimension of 1, and it
  keeps estimates in single precision, so counts stay below 2**24 to compare exactly.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

# The estimate fields a student's `estimates_from` returns, and where the compiler keeps each.
COST_KEYS = {"flops": "flops", "bytes_accessed": "bytes accessed"}
MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
}
ESTIMATE_FIELDS = (*COST_KEYS, *MEMORY_FIELDS)
STAGE_KEYS = ("jaxpr", "lowered", "stablehlo", "compiled", "estimates")
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
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return jnp.asarray(a), jnp.asarray(b)


@dataclass
class Watch:
    """What happened to a watched workload: the shapes it was traced with, and how often it ran."""
    traced_shapes: list = field(default_factory=list)
    runs: int = 0

    def executions(self) -> int:
        """Runs so far, after waiting for every pending callback."""
        import jax
        jax.effects_barrier()
        return self.runs


def watched_matmul(*, count_runs: bool = False):
    """A plain Python matmul workload and its Watch.

    Tracing records the argument shapes. With `count_runs`, the program also carries a debug
    callback that fires each time the compiled program executes (never while tracing, lowering
    or compiling). Leave it off when comparing cost estimates: the callback changes the program.
    """
    import jax
    watch = Watch()

    def _ran():
        watch.runs += 1

    def workload(a, b):
        watch.traced_shapes.append([tuple(a.shape), tuple(b.shape)])
        if count_runs:
            jax.debug.callback(_ran)
        return a @ b

    return workload, watch


def _number(value) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


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
    found = {name: _number(costs.get(key)) for name, key in COST_KEYS.items()}
    found.update({name: _number(getattr(memory, attr, None)) for name, attr in MEMORY_FIELDS.items()})
    return found


class StandInCompiled:
    """Answers `cost_analysis()` and `memory_analysis()` as scripted: a value, or an exception to raise."""

    def __init__(self, cost, memory):
        self._cost, self._memory = cost, memory

    @staticmethod
    def _answer(scripted):
        if isinstance(scripted, BaseException):
            raise scripted
        return scripted

    def cost_analysis(self):
        return self._answer(self._cost)

    def memory_analysis(self):
        return self._answer(self._memory)

    def __repr__(self):
        return f"StandInCompiled(cost={self._cost!r}, memory={self._memory!r})"


@dataclass
class StandInCase:
    name: str
    compiled: StandInCompiled
    expected: dict  # field -> number, or None where the estimate is missing


def stand_in_cases(rng: np.random.Generator) -> list[StandInCase]:
    """Compiled stand-ins with fresh numbers: complete, in another shape, partial, absent, failing."""
    def cost_numbers():
        return {"flops": float(rng.integers(100, 10**7)), "bytes_accessed": float(rng.integers(100, 10**6))}

    def memory_numbers():
        return {name: int(rng.integers(1, 10**6)) for name in MEMORY_FIELDS}

    def cost_dict(numbers_, drop=()):
        extra = {"transcendentals": float(rng.integers(0, 1000)), "utilization0{}": 1.0}
        return {**extra, **{COST_KEYS[k]: v for k, v in numbers_.items() if k not in drop}}

    def memory_stats(numbers_, drop=()):
        return SimpleNamespace(**{MEMORY_FIELDS[k]: v for k, v in numbers_.items() if k not in drop},
                               alias_size_in_bytes=0)

    nothing = dict.fromkeys(ESTIMATE_FIELDS)
    cases = []

    c, m = cost_numbers(), memory_numbers()
    cases.append(StandInCase("a dict and complete memory stats",
                             StandInCompiled(cost_dict(c), memory_stats(m)), {**c, **m}))
    c, m = cost_numbers(), memory_numbers()
    cases.append(StandInCase("a list holding one dict (older JAX)",
                             StandInCompiled([cost_dict(c)], memory_stats(m)), {**c, **m}))
    cases.append(StandInCase("None from both", StandInCompiled(None, None), dict(nothing)))
    cases.append(StandInCase("exceptions from both",
                             StandInCompiled(NotImplementedError("cost analysis is not available"),
                                             RuntimeError("UNIMPLEMENTED: memory analysis")),
                             dict(nothing)))
    m = memory_numbers()
    cases.append(StandInCase("an empty list and memory stats without temp_size_in_bytes",
                             StandInCompiled([], memory_stats(m, drop=("temp_bytes",))),
                             {**nothing, **m, "temp_bytes": None}))
    c, m = cost_numbers(), memory_numbers()
    cases.append(StandInCase("a dict without 'bytes accessed', memory None",
                             StandInCompiled(cost_dict(c, drop=("bytes_accessed",)), None),
                             {**nothing, "flops": c["flops"]}))
    c = cost_numbers()
    cases.append(StandInCase("a dict holding None for 'flops'",
                             StandInCompiled({**cost_dict(c), "flops": None},
                                             RuntimeError("memory analysis failed")),
                             {**nothing, "bytes_accessed": c["bytes_accessed"]}))
    return cases


def estimate_problems(estimates, expected: dict) -> list[str]:
    """How a student's estimates differ from what the compiler said: empty when they agree.

    Present estimates must be the compiler's numbers (not rounded, not replaced); missing ones
    must be None (never 0), and `estimates["missing"]` must name exactly the missing ones, each
    with a non-empty reason.
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
        elif _number(got) is None or not math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=0):
            problems.append(f"{name}: the compiler estimated {want!r}, the result says {got!r}")
    missing = estimates.get("missing")
    absent = sorted(name for name, want in expected.items() if want is None)
    if not isinstance(missing, dict):
        problems.append(f"'missing' should be a dict naming each missing estimate, got {missing!r}")
    else:
        if sorted(missing) != absent:
            problems.append(f"'missing' names {sorted(missing)}, the missing estimates are {absent}")
        empty = [k for k, reason in missing.items() if not isinstance(reason, str) or not reason.strip()]
        if empty:
            problems.append(f"'missing' gives no reason for {empty}")
    return problems


def stage_problems(result, m: int, k: int, n: int) -> list[str]:
    """How `read_program(fn, a, b)` for an (m, k) @ (k, n) product departs from the contract."""
    import jax
    if not isinstance(result, dict):
        return [f"expected a dict, got {type(result).__name__}"]
    absent = [key for key in STAGE_KEYS if key not in result]
    if absent:
        return [f"missing keys {absent}"]
    problems = []
    ins, out = [(m, k), (k, n)], [(m, n)]
    jaxpr, lowered, compiled = result["jaxpr"], result["lowered"], result["compiled"]
    try:
        if shapes(jaxpr.in_avals) != ins or shapes(jaxpr.out_avals) != out:
            problems.append(f"the jaxpr takes {shapes(jaxpr.in_avals)} and gives {shapes(jaxpr.out_avals)}, "
                            f"expected {ins} -> {out}")
    except AttributeError:
        problems.append(f"'jaxpr' should be a jaxpr (jax.make_jaxpr or Traced.jaxpr), got {type(jaxpr).__name__}")
    if not isinstance(lowered, jax.stages.Lowered):
        problems.append(f"'lowered' should be a jax.stages.Lowered, got {type(lowered).__name__}")
    elif shapes(lowered.in_avals) != ins:
        problems.append(f"lowered for {shapes(lowered.in_avals)}, expected {ins}")
    if not isinstance(compiled, jax.stages.Compiled):
        problems.append(f"'compiled' should be a jax.stages.Compiled, got {type(compiled).__name__}")
    else:
        if shapes(compiled.in_avals) != ins or shapes(compiled.out_info) != out:
            problems.append(f"compiled for {shapes(compiled.in_avals)} -> {shapes(compiled.out_info)}, "
                            f"expected {ins} -> {out}")
        problems += estimate_problems(result["estimates"], backend_estimates(compiled))
    if not isinstance(result["stablehlo"], str) or not result["stablehlo"].strip():
        problems.append("'stablehlo' should be the lowered program's text (Lowered.as_text())")
    return problems


def flop_estimate_problems(estimates, m: int, k: int, n: int, backend_flops: float | None) -> list[str]:
    """The flop estimate of an (m, k) @ (k, n) product against the hand count 2*m*k*n.

    A backend that estimates no flops is allowed: then the estimate must be reported missing.
    """
    if not isinstance(estimates, dict):
        return [f"expected a dict of estimates, got {type(estimates).__name__}"]
    flops = estimates.get("flops")
    if backend_flops is None:
        if flops is not None or "flops" not in (estimates.get("missing") or {}):
            return [f"this backend estimates no flops, but the result says {flops!r}"]
        return []
    hand = matmul_flops(m, k, n)
    # XLA keeps its flop estimate in single precision: above 2**24 it is the hand count, rounded.
    if _number(flops) is None or float(flops) not in (hand, float(np.float32(hand))):
        return [f"flops estimate {flops!r} for ({m}, {k}) @ ({k}, {n}); the hand count is 2*m*k*n = {hand}"]
    return []
