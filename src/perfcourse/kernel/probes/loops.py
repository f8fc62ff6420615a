"""Probes of lesson performance-04 (loops), run in the student's process for inputs picked by the
trusted side; everything they return is plain data, judged there (`perfcourse.checks.loops`).

- `structure(jaxpr)`: a jaxpr as nested lists, one `[name, [sub, ...]]` per equation, each `sub`
  the same form for a jaxpr the equation holds (a nested jit, a scan's body, a cond's branches).
  The trusted side builds and counts the jaxprs of the functions below itself, with its own walker.
- `run_measure(measure, kind, args, warm_calls, program=None)`: the student's
  `measure(fn, *args, warm_calls=N)` on a plain function built here from course code: the
  lesson's `unrolled` loop, a `nested` function (a jit and a scan inside), or the `instrument`:
  a function whose trace asks the trusted side's `program` for its size (so traces are seen
  there) and whose compiled program runs a device loop for a trip count passed as its last
  argument, next to a small matrix product, so that XLA's CPU client dispatches it
  asynchronously, as an accelerator would: the call returns before its result is ready.

The scanned loop is not examined here: its program is exported (`probes.programs.export`) and
the trusted side reads, compiles and runs it itself.
"""
from __future__ import annotations

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


def instrument(program):
    """`fn(h, xs, a, spins)`: its size comes from `program` at trace time, its run time from `spins`."""
    import jax.numpy as jnp
    from jax import lax

    def instrument(h, xs, a, spins):
        steps, salt = program.trace()  # the trusted side sees every trace of this function
        for t in range(int(steps)):    # a program that takes a while to compile
            h = jnp.tanh(a * h + xs[t % xs.shape[0]] + jnp.float32(salt))
        spun = lax.fori_loop(0, spins, lambda i, c: c * jnp.float32(0.9999999) + 1.0, jnp.float32(0))
        matrix = jnp.ones((MATRIX, MATRIX), jnp.float32)
        ready = (matrix @ matrix)[: h.shape[0], : h.shape[1]] * 0 + spun
        return h + ready * jnp.float32(1e-30)

    return instrument


def build(kind: str, program=None):
    if kind == "unrolled":
        return unrolled
    if kind == "nested":
        return nested()
    if kind == "instrument":
        return instrument(program)
    raise ValueError(f"no function of kind {str(kind)[:40]!r}")


def run_measure(measure, kind, args, warm_calls, program=None):
    """The student's `measure(fn, *args, warm_calls=N)` on a fresh function built here."""
    import jax

    fn = build(kind, program)
    args = jax.block_until_ready(tuple(jax.device_put(arg) for arg in args))
    return measure(fn, *args, warm_calls=warm_calls)
