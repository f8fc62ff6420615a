"""Grade loops and their measurement (lesson performance-04) by structure, never by speed.

Two tools:

`count_equations(jaxpr)` counts the operations of a jaxpr wherever they are nested. An
equation that only holds other jaxprs (a nested jit, scan, while, cond, custom derivative)
counts as the operations inside it, not as one more: so `make_jaxpr(f)` and
`make_jaxpr(jax.jit(f))` count the same, and the count depends on no primitive name (names
change between JAX versions: pjit became jit). A Python loop unrolled at trace time makes the
count grow with the loop length; a scanned loop does not.

`run_measure(measure, fn, args, warm_calls)` runs a student's `measure(fn, *args, warm_calls=N)`
against a scripted compiler and device. While it runs, `jax.jit(fn)` returns an instrumented
object: tracing and lowering it costs `LOWER_SECONDS`, compiling it `COMPILE_SECONDS`, each paid
once, as JAX's caches do (a second `.lower().compile()` of the same function and shapes, or a
call after an ahead-of-time compile, finds the program already built); every execution
dispatches at once and finishes its work (`WORK_SECONDS`) only when its result is
synchronized. `jax.clear_caches()` empties the scripted caches too. Every clock the student can reach reads the scripted time
(`perfcourse.checks.timing.scripted_time`), so the seconds the function reports say exactly
which events each measurement spans:

    compile measured apart:   compile_seconds = COMPILE (+ LOWER)      no execution inside
    compile and run together: compile_seconds = LOWER + COMPILE + DISPATCH + WORK
    compile cache hit:        compile_seconds = 0
    synchronized run:         run sample = DISPATCH + WORK
    unsynchronized run:       run sample = DISPATCH

`jax.make_jaxpr` and `.trace(...).jaxpr` stay real: equation counts come from real tracing.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import jax

from .timing import (COMPILE_SECONDS, DISPATCH_SECONDS, WORK_SECONDS, PendingResult,
                     ScriptedDevice, TimerRun, close, scripted_time)

LOWER_SECONDS = 0.5  # tracing and lowering to the compiler's input, paid once

__all__ = ["COMPILE_SECONDS", "DISPATCH_SECONDS", "LOWER_SECONDS", "WORK_SECONDS", "MeasureRun",
           "close", "count_equations", "run_measure", "top_level_equations"]


# --------------------------------------------------------------------------- equation counts

def _inner_jaxprs(value):
    """The jaxprs held by one equation parameter, found by shape rather than by type name."""
    if hasattr(value, "eqns"):                                        # an open Jaxpr
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):   # a ClosedJaxpr
        yield value.jaxpr
    elif isinstance(value, (list, tuple)):                            # e.g. cond's branches
        for item in value:
            yield from _inner_jaxprs(item)


def count_equations(jaxpr) -> int:
    """Operations in a (closed) jaxpr, counting nested jaxprs' operations instead of their holders."""
    if not hasattr(jaxpr, "eqns"):
        jaxpr = jaxpr.jaxpr
    total = 0
    for eqn in jaxpr.eqns:
        inner = [j for value in eqn.params.values() for j in _inner_jaxprs(value)]
        total += sum(count_equations(j) for j in inner) if inner else 1
    return total


def top_level_equations(jaxpr) -> int:
    """Equations at the top level only: a nested jaxpr counts as one."""
    return len(jaxpr.eqns if hasattr(jaxpr, "eqns") else jaxpr.jaxpr.eqns)


# --------------------------------------------------------------------- the scripted compiler

@dataclass
class CompilerDevice(ScriptedDevice):
    """The scripted clock and log, plus what JAX's caches would already hold."""
    lowered: bool = False
    compiled: bool = False
    lowerings: int = 0
    compilations: int = 0

    def lower(self):
        if not self.lowered:
            self.lowered = True
            self.lowerings += 1
            self.now += LOWER_SECONDS
            self.events.append(("lower", self.lowerings))

    def compile(self):
        self.lower()
        if not self.compiled:
            self.compiled = True
            self.compilations += 1
            self.now += COMPILE_SECONDS
            self.events.append(("compile", self.compilations))

    def forget(self):
        """jax.clear_caches(): the next lowering and compilation are paid again."""
        self.lowered = self.compiled = False

    def execute(self):
        self.compile()  # a plain call compiles first, unless a program is already cached
        self.calls += 1
        self.now += DISPATCH_SECONDS
        self.events.append(("call", self.calls))
        return PendingResult(self, self.calls)

    def __call__(self, *args, **kwargs):
        return self.execute()


def _traced(tree) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(tree))


class _Forward:
    """Attributes the scripted object does not model come from the real JAX object, built on demand."""

    def __init__(self, device: CompilerDevice, make_real):
        self._device, self._make_real, self._real = device, make_real, None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._real is None:
            self._real = self._make_real()
        return getattr(self._real, name)


class ScriptedCompiled(_Forward):
    def __call__(self, *args, **kwargs):
        return self._device.execute()


class ScriptedLowered(_Forward):
    def compile(self, *args, **kwargs):
        self._device.compile()
        return ScriptedCompiled(self._device, lambda: self._make_real_lowered().compile(*args, **kwargs))

    def _make_real_lowered(self):
        if self._real is None:
            self._real = self._make_real()
        return self._real


class ScriptedTraced(_Forward):
    def lower(self, *args, **kwargs):
        self._device.lower()
        return ScriptedLowered(self._device, lambda: self._make_real_traced().lower(*args, **kwargs))

    def _make_real_traced(self):
        if self._real is None:
            self._real = self._make_real()
        return self._real


class ScriptedJit(_Forward):
    """What `jax.jit(fn)` returns during the check: a real jitted function for tracing, scripted otherwise."""

    def __init__(self, device: CompilerDevice, real_jitted):
        super().__init__(device, lambda: real_jitted)
        self._jitted = real_jitted

    def __call__(self, *args, **kwargs):
        if _traced((args, kwargs)):  # called while tracing (make_jaxpr, an outer jit): stay real
            return self._jitted(*args, **kwargs)
        return self._device.execute()

    def lower(self, *args, **kwargs):
        self._device.lower()
        return ScriptedLowered(self._device, lambda: self._jitted.lower(*args, **kwargs))

    def trace(self, *args, **kwargs):
        real = self._jitted.trace(*args, **kwargs)  # tracing is real: its jaxpr is counted
        return ScriptedTraced(self._device, lambda: real)


@contextlib.contextmanager
def scripted_jit(device: CompilerDevice, target, *namespaces: dict):
    """While active, `jax.jit(target, ...)` (or a name bound to jax.jit) returns a ScriptedJit,
    and `jax.clear_caches()` also empties the scripted compiler's cache."""
    real_jit, real_clear = jax.jit, jax.clear_caches

    def jit(fun=None, *args, **kwargs):
        if fun is None:
            return real_jit(*args, **kwargs)
        if fun is target:
            return ScriptedJit(device, real_jit(fun, *args, **kwargs))
        return real_jit(fun, *args, **kwargs)

    def clear_caches(*args, **kwargs):
        device.forget()
        return real_clear(*args, **kwargs)

    replacements = {real_jit: jit, real_clear: clear_caches}
    undo = [(setattr, jax, "jit", real_jit), (setattr, jax, "clear_caches", real_clear)]
    jax.jit, jax.clear_caches = jit, clear_caches
    try:
        for namespace in namespaces:
            for key, value in list(namespace.items()):
                for real, fake in replacements.items():
                    if value is real:
                        undo.append((dict.__setitem__, namespace, key, value))
                        namespace[key] = fake
        yield device
    finally:
        for restore, owner, key, value in reversed(undo):
            restore(owner, key, value)


@dataclass
class MeasureRun:
    """What a student's measure function returned, and what happened while it ran."""
    result: dict
    events: list
    calls: int
    compilations: int
    run_seconds: list = field(default_factory=list)

    @property
    def compile_seconds(self) -> float:
        return float(self.result["compile_seconds"])

    def compile_alone(self) -> bool:
        """compile_seconds spans compilation (with or without lowering) and no execution."""
        return any(close(self.compile_seconds, expected)
                   for expected in (COMPILE_SECONDS, LOWER_SECONDS + COMPILE_SECONDS))

    def unsynchronized_measurements(self) -> list[int]:
        """Executions whose measurement ended before their result was ready (see timing.TimerRun)."""
        return TimerRun(0.0, [], self.calls, self.events).unsynchronized_measurements()


def run_measure(measure, fn, args: tuple, warm_calls: int) -> MeasureRun:
    """Run `measure(fn, *args, warm_calls=warm_calls)` on the scripted compiler, clock and device."""
    device = CompilerDevice()
    namespace = getattr(measure, "__globals__", {})
    with scripted_time(device, namespace), scripted_jit(device, fn, namespace):
        result = measure(fn, *args, warm_calls=warm_calls)
    if not isinstance(result, dict):
        raise AssertionError(f"measure must return a dict, got {type(result).__name__}")
    missing = {"equations", "compile_seconds", "run_seconds"} - set(result)
    if missing:
        raise AssertionError(f"measure's dict is missing {sorted(missing)}")
    return MeasureRun(result, list(device.events), device.calls, device.compilations,
                      [float(s) for s in result["run_seconds"]])
