"""Export a function of the student's process as a serialized JAX program (`jax.export`).

The trusted kernel does not take the student's word for what a program is: it asks for the
program itself, as bytes, and examines, compiles and runs it on its own side
(`perfcourse.checks.programs`). A replaced probe can send any bytes; what they then have to be is
a program that passes those checks, which is the work asked for.
"""
from __future__ import annotations

PROBES = ("export",)


def export(fn, specs, drop_debug_callbacks=False):
    """`fn` (jitted here if it is not already) exported for arguments of these (shape, dtype)
    pairs: the bytes of `jax.export.Exported.serialize()`.

    jax.export cannot serialize host callbacks. With `drop_debug_callbacks`, a function that holds
    `jax.debug.callback` or `jax.debug.print` calls (which compute nothing the result depends on)
    is exported without them: its jaxpr, those equations left out at every level."""
    import jax

    structs = [jax.ShapeDtypeStruct(tuple(int(d) for d in shape), dtype) for shape, dtype in specs]
    target = as_jitted(fn)
    if drop_debug_callbacks:
        from jax.extend import core

        closed = jax.make_jaxpr(target)(*structs)
        stripped = _without_debug_callbacks(closed.jaxpr)
        if stripped is not closed.jaxpr:
            run = core.jaxpr_as_fun(core.ClosedJaxpr(stripped, closed.consts))

            def target(*args):
                outs = run(*args)
                return outs[0] if len(outs) == 1 else tuple(outs)
            target = jax.jit(target)
    return bytes(jax.export.export(target)(*structs).serialize())


def as_jitted(fn):
    """`fn` as jax.jit's own object, whose program is what calling it runs: itself if it is one, else
    jitted here. jax.export reads a program through `fn.trace`, and jax.jit copies a function's
    attributes onto the object it returns, so a function (or a jitted one) carrying a jitted twin's
    `lower` or `trace` would send the twin's program: refused."""
    import jax

    if {"lower", "trace"} & set(getattr(fn, "__dict__", None) or ()):
        raise TypeError("the function carries a `lower` or `trace` of its own: hand over the function itself")
    return fn if isinstance(fn, type(jax.jit(abs))) else jax.jit(fn)


def _debug_effect(effect) -> bool:
    return "DebugEffect" in type(effect).__name__


def _without_debug_callbacks(jaxpr):
    """`jaxpr` without its debug_callback equations, in nested jaxprs too (jit, scan, while, cond);
    the same object when it holds none."""
    from jax.extend import core

    def inner(value):
        if isinstance(value, core.ClosedJaxpr):
            stripped = _without_debug_callbacks(value.jaxpr)
            return value if stripped is value.jaxpr else core.ClosedJaxpr(stripped, value.consts)
        if isinstance(value, core.Jaxpr):
            return _without_debug_callbacks(value)
        if isinstance(value, tuple) and any(isinstance(v, (core.Jaxpr, core.ClosedJaxpr)) for v in value):
            return tuple(inner(v) for v in value)
        return value

    changed, eqns = False, []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "debug_callback":
            changed = True
            continue
        params = {key: inner(value) for key, value in eqn.params.items()}
        if any(params[key] is not eqn.params[key] for key in params) or any(map(_debug_effect, eqn.effects)):
            changed = True
            eqn = eqn.replace(params=params, effects=frozenset(e for e in eqn.effects if not _debug_effect(e)))
        eqns.append(eqn)
    if not changed:
        return jaxpr
    return jaxpr.replace(eqns=eqns, effects=frozenset(e for e in jaxpr.effects if not _debug_effect(e)))
