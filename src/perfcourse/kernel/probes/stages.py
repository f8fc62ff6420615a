"""performance-03's probes, run in the student's process: what only that process can build.

- `estimates_of_stand_ins(estimates_from, scripts)` builds stand-in compiled programs *here*, in
  the student's process, from plain-data scripts picked on the trusted side (what
  `cost_analysis()` and `memory_analysis()` return or raise), hands each to the student's
  `estimates_from`, and returns what it gave (or the exception it raised). The stand-ins are
  built here rather than lent from the trusted side so that they behave as a real compiled
  program's answers do: an absent attribute raises AttributeError (so `getattr(stats, name, None)`
  works), exceptions arrive as the types a backend raises, and the memory stats are plain objects.
- `watched_workload(body, report, shapes)` builds the workload the trusted side hands to the
  student's `read_program`, and ShapeDtypeStructs of `shapes` (arguments without data). The
  workload's body is the trusted side's own function (`perfcourse.checks.stages.WatchedProduct`,
  lent: its calls go back there, so the trusted side sees every trace); around it (unless `report`
  is None), a debug callback to the trusted side's `report` fires each time the compiled program
  executes (on the CPU synchronously, on the thread that runs it), with the first element of its
  first input. These
  come back as objects (stand-ins), not values: the trusted side calls `read_program` with them
  itself and questions what it returns.

Nothing here judges (`perfcourse.checks.stages` does). Student code can replace this module like
anything in its process; the trusted side does not take its word for anything it checks (see the
checks' docstring for what a replaced probe can still hide).
"""
from __future__ import annotations

import types

PROBES = ("estimates_of_stand_ins", "watched_workload")


# --- the watched workload ---------------------------------------------------------------------
def watched_workload(body, report, shapes):
    """`workload(a, b)`: report this execution (unless `report` is None), then the trusted side's
    body; and the arguments' ShapeDtypeStructs (float32)."""
    import jax
    import jax.numpy as jnp

    def workload(a, b):
        if report is not None:
            jax.debug.callback(report, a[0, 0])  # each execution of the compiled program reports itself
        return body(a, b)

    specs = tuple(jax.ShapeDtypeStruct(tuple(int(d) for d in shape), jnp.float32) for shape in shapes)
    return workload, specs


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
