"""Probes of lesson performance-04 (loops), run in the student's process for inputs picked by the
trusted side; everything they return is plain data, judged there (`perfcourse.checks.loops`).

- `structure(jaxpr)`: a jaxpr as nested lists, one `[name, [sub, ...]]` per equation, each `sub`
  the same form for a jaxpr the equation holds (a nested jit, a scan's body, a cond's branches).
  The trusted side builds and counts the jaxprs of the functions below itself, with its own walker.
- `run_measure(measure, kind, args, warm_calls, program=None)`: the student's
  `measure(fn, *args, warm_calls=N)` on a plain function built here from course code: the
  lesson's `unrolled` loop, a `nested` function (a jit and a scan inside), or the `instrument`:
  a function each stage of whose compilation reports to the trusted side's `program`, which
  holds each for a time it draws (its trace asks for its size; its lowering runs a marking
  primitive's lowering rule; its compile event is seen by a listener registered while measure
  runs), and whose compiled program runs a device loop for a trip count passed as its last
  argument, next to a small matrix product, so that XLA's CPU client dispatches it
  asynchronously, as an accelerator would: the call returns before its result is ready.

The scanned loop is not examined here: its program is exported (`probes.programs.export`) and
the trusted side reads, compiles and runs it itself.
"""
from __future__ import annotations

import functools

PROBES = ("run_measure",)
MATRIX = 256


def _inner_jaxprs(value):
    """The jaxprs held by one equation parameter, found by shape rather than by type name."""
    if hasattr(value, "eqns"):                                        # an open Jaxpr
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):   # a ClosedJaxpr
        yield value.jaxpr
    elif isinstance(value, (list, tuple)):                            # e.g. cond's branches
        for item in value:
            yield from _inner_jaxprs(item)


def structure(jaxpr) -> list:
    """A (closed or open) jaxpr as `[[name, [sub-structure, ...]], ...]`, one entry per equation."""
    if not hasattr(jaxpr, "eqns"):
        jaxpr = jaxpr.jaxpr
    return [[str(getattr(eqn.primitive, "name", eqn.primitive)),
             [structure(inner) for value in eqn.params.values() for inner in _inner_jaxprs(value)]]
            for eqn in jaxpr.eqns]


# --- functions handed to the student's measure ---------------------------------------------------

def unrolled(h, xs, a):
    import jax.numpy as jnp

    for t in range(xs.shape[0]):
        h = jnp.tanh(a * h + xs[t])
    return h


def nested():
    """Operations at three levels: a jit inside, a scan inside, and the top level."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    inner = jax.jit(lambda v: jnp.sin(v) * 2.0)

    def nested(h, xs, a):
        h = inner(h)
        h, _ = lax.scan(lambda c, x: (jnp.cos(c) + x, None), h, xs)
        return jnp.tanh(a * h)

    return nested


COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # as in probes/tracing.py


@functools.lru_cache(maxsize=None)
def _lowering_mark():
    """A primitive that computes nothing and whose lowering rule tells the trusted side, through
    the program it is bound with, that the function is being lowered (the rule runs in `.lower()`)."""
    from jax.extend.core import Primitive
    from jax.interpreters import mlir

    mark = Primitive("perfcourse_lowering_mark")
    mark.def_abstract_eval(lambda x, *, program: x)
    mark.def_impl(lambda x, *, program: x)

    def rule(ctx, x, *, program):
        program.lowered()  # the trusted side sees the lowering (and holds it a while)
        return [x]

    mlir.register_lowering(mark, rule)
    return mark


def instrument(program, report_runs: bool = False):
    """`fn(h, xs, a, spins)`: each stage of its compilation reports to the trusted side's `program`
    (which holds each for a time it draws): its trace (the Python body), its lowering (a marking
    primitive's lowering rule) and its compilation (JAX's compile event, seen by a listener that
    `run_measure` registers). Its size comes from `program` at trace time, its run time from
    `spins`. With `report_runs`, each run of its program reports too (a host callback: the call
    then returns only once its result is ready)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    mark = _lowering_mark()

    def instrument(h, xs, a, spins):
        steps, salt = program.trace()  # the trusted side sees every trace of this function
        for t in range(int(steps)):    # a program that takes a while to compile
            h = jnp.tanh(a * h + xs[t % xs.shape[0]] + jnp.float32(salt))
        h = mark.bind(h, program=program)
        spun = lax.fori_loop(0, spins, lambda i, c: c * jnp.float32(0.9999999) + 1.0, jnp.float32(0))
        matrix = jnp.ones((MATRIX, MATRIX), jnp.float32)
        ready = (matrix @ matrix)[: h.shape[0], : h.shape[1]] * 0 + spun
        if report_runs:
            jax.debug.callback(lambda _: program.ran(), spun)
        return h + ready * jnp.float32(1e-30)

    return instrument


class _CompileWatch:
    """While the student's measure runs: the first compilation after the instrument was lowered
    reports to the trusted side's program (JAX records its compile event as `.compile()` ends)."""

    def __init__(self, program):
        self.program, self.lowered = program, None

    def _listener(self, event, duration_secs, *args, **kwargs):
        if event == COMPILE_EVENT and self.program is not None and self.program.lowerings() > self.lowered:
            self.lowered = self.program.lowerings()
            self.program.compiled()

    def __enter__(self):
        import jax

        self.lowered = self.program.lowerings()
        jax.monitoring.register_event_duration_secs_listener(self._listener)
        return self

    def __exit__(self, *exc):
        import jax

        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is not None:
            unregister(self._listener)
        self.program = None
        return False


def build(kind: str, program=None):
    if kind == "unrolled":
        return unrolled
    if kind == "nested":
        return nested()
    if kind in ("instrument", "staged-instrument"):
        return instrument(program, report_runs=kind == "staged-instrument")
    raise ValueError(f"no function of kind {str(kind)[:40]!r}")


def run_measure(measure, kind, args, warm_calls, program=None):
    """The student's `measure(fn, *args, warm_calls=N)` on a fresh function built here."""
    import contextlib

    import jax

    fn = build(kind, program)
    args = jax.block_until_ready(tuple(jax.device_put(arg) for arg in args))
    with _CompileWatch(program) if kind.endswith("instrument") else contextlib.nullcontext():
        return measure(fn, *args, warm_calls=warm_calls)
