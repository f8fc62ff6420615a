"""performance-03's probes, run in the student's process: what reading a program left behind.

- `estimates_of_stand_ins(estimates_from, scripts)` builds stand-in compiled programs *here*, in
  the student's process, from plain-data scripts picked on the trusted side (what
  `cost_analysis()` and `memory_analysis()` return or raise), hands each to the student's
  `estimates_from`, and returns what it gave (or the exception it raised). The stand-ins are
  built here rather than lent from the trusted side so that they behave as a real compiled
  program's answers do: an absent attribute raises AttributeError (so `getattr(stats, name, None)`
  works), exceptions arrive as the types a backend raises, and the memory stats are plain objects.
- `read_matmul(read_program, estimates_from, m, k, n, arrays, count_runs)` builds a *watched*
  matrix-product workload (a plain Python function: it records the shapes it is traced with and,
  with `count_runs`, carries a debug callback that counts executions), calls the student's
  `read_program` on it for the shapes picked on the trusted side (the arrays it sent, or
  ShapeDtypeStructs when it sent none), and describes the result as plain data.

Nothing here judges: the trusted side (`perfcourse.checks.stages`) compares the description with
the shapes it picked.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field

PROBES = ("estimates_of_stand_ins", "read_matmul")
STAGE_KEYS = ("jaxpr", "lowered", "stablehlo", "compiled", "estimates")


# --- the watched workload ---------------------------------------------------------------------
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
        watch.traced_shapes.append([tuple(int(d) for d in a.shape), tuple(int(d) for d in b.shape)])
        if count_runs:
            jax.debug.callback(_ran)
        return a @ b

    return workload, watch


# --- stand-in compiled programs ---------------------------------------------------------------
def _exception(kind: str, message: str) -> Exception:
    """The exception a backend raises for an analysis it does not have."""
    if kind == "JaxRuntimeError":
        import jax
        return jax.errors.JaxRuntimeError(message)
    return {"NotImplementedError": NotImplementedError, "RuntimeError": RuntimeError,
            "ValueError": ValueError}.get(kind, RuntimeError)(message)


class CompiledStandIn:
    """A compiled program's two analyses, answered as scripted."""

    def __init__(self, cost: dict, memory: dict):
        self._cost, self._memory = cost, memory

    @staticmethod
    def _answer(script: dict, as_stats: bool):
        if "raises" in script:
            kind, message = script["raises"]
            raise _exception(str(kind), str(message))
        value = script.get("returns")
        if as_stats and isinstance(value, dict):
            return types.SimpleNamespace(**value)
        if isinstance(value, list):  # a list of cost dicts (older JAX): plain dicts, not the channel's
            return [dict(item) if isinstance(item, dict) else item for item in value]
        return dict(value) if isinstance(value, dict) else value

    def cost_analysis(self):
        return self._answer(self._cost, as_stats=False)

    def memory_analysis(self):
        return self._answer(self._memory, as_stats=True)


def estimates_of_stand_ins(estimates_from, scripts):
    """The student's estimates for each scripted compiled program: {"returned": ...} or {"raised": ...}."""
    answers = []
    for script in scripts:
        compiled = CompiledStandIn(script["cost"], script["memory"])
        try:
            answers.append({"returned": estimates_from(compiled)})
        except Exception as exc:
            answers.append({"raised": f"{type(exc).__name__}: {exc}"[:500]})
    return answers


# --- describing what read_program returned ----------------------------------------------------
def _shapes(tree):
    import jax
    return [[int(d) for d in leaf.shape] for leaf in jax.tree.leaves(tree)]


def _try(read, default=None):
    try:
        return read()
    except Exception:
        return default


def _type(value) -> str:
    return type(value).__name__


def _number(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def compiler_estimates(compiled) -> dict:
    """The compiler's own flop and byte numbers for `compiled`, normalized (None where absent)."""
    costs = _try(compiled.cost_analysis)
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else None
    costs = costs if isinstance(costs, dict) else {}
    memory = _try(compiled.memory_analysis)
    return {"flops": _number(costs.get("flops")),
            "argument_bytes": _number(getattr(memory, "argument_size_in_bytes", None)),
            "output_bytes": _number(getattr(memory, "output_size_in_bytes", None))}


def describe(result, estimates_from, m: int, k: int, n: int) -> dict:
    """What read_program returned, as plain data: types, shapes, and the compiler's own numbers."""
    import jax

    if not isinstance(result, dict):
        return {"type": _type(result)}
    described = {"type": "dict", "keys": sorted(str(key) for key in result)}
    if "jaxpr" in result:
        jaxpr = result["jaxpr"]
        described["jaxpr"] = {
            "type": _type(jaxpr),
            "in": _try(lambda: _shapes(list(jaxpr.in_avals))),
            "out": _try(lambda: _shapes(list(jaxpr.out_avals))),
            "primitives": _try(lambda: [str(eqn.primitive.name) for eqn in jaxpr.eqns]),
        }
    if "lowered" in result:
        lowered = result["lowered"]
        is_lowered = isinstance(lowered, jax.stages.Lowered)
        described["lowered"] = {"type": _type(lowered), "is_lowered": is_lowered,
                                "in": _try(lambda: _shapes(lowered.in_avals)) if is_lowered else None}
    if "stablehlo" in result:
        text = result["stablehlo"]
        is_text = isinstance(text, str)
        described["stablehlo"] = {
            "type": _type(text), "length": len(text.strip()) if is_text else 0,
            # MLIR writes a float32 array type as tensor<MxKxf32>: the program's own shapes.
            "mentions": [is_text and f"tensor<{a}x{b}xf32>" in text for a, b in ((m, k), (k, n), (m, n))],
        }
    if "compiled" in result:
        compiled = result["compiled"]
        is_compiled = isinstance(compiled, jax.stages.Compiled)
        described["compiled"] = {"type": _type(compiled), "is_compiled": is_compiled}
        if is_compiled:
            described["compiled"].update({
                "in": _try(lambda: _shapes(compiled.in_avals)),
                "out": _try(lambda: _shapes(compiled.out_info)),
                "compiler": compiler_estimates(compiled),
            })
            try:
                described["estimates_of_compiled"] = {"returned": estimates_from(compiled)}
            except Exception as exc:
                described["estimates_of_compiled"] = {"raised": f"{type(exc).__name__}: {exc}"[:500]}
    if "estimates" in result:
        described["estimates"] = result["estimates"]
    return described


def read_matmul(read_program, estimates_from, m: int, k: int, n: int, arrays=None, count_runs: bool = False):
    """The student's read_program on a watched (m, k) @ (k, n) workload, described as plain data.

    `arrays` are the two inputs picked on the trusted side; without them, ShapeDtypeStructs
    of the same shapes (float32), which hold no data.
    """
    import jax
    import jax.numpy as jnp

    m, k, n = int(m), int(k), int(n)
    if arrays is None:
        args = (jax.ShapeDtypeStruct((m, k), jnp.float32), jax.ShapeDtypeStruct((k, n), jnp.float32))
    else:
        args = tuple(jnp.asarray(a) for a in arrays)
    workload, watch = watched_matmul(count_runs=count_runs)
    report = {}
    try:
        result = read_program(workload, *args)
    except Exception as exc:
        report["raised"] = f"{type(exc).__name__}: {exc}"[:500]
    else:
        report["result"] = describe(result, estimates_from, m, k, n)
    report["traced_shapes"] = [[list(s) for s in call] for call in watch.traced_shapes]
    report["executions"] = watch.executions()
    return report
