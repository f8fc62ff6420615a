"""Export a function of the student's process as a serialized JAX program (`jax.export`).

The trusted kernel does not take the student's word for what a program is: it asks for the
program itself, as bytes, and examines, compiles and runs it on its own side
(`perfcourse.checks.programs`). A replaced probe can send any bytes; what they then have to be is
a program that passes those checks, which is the work asked for.
"""
from __future__ import annotations

PROBES = ("export",)


def export(fn, specs):
    """`fn` (jitted here if it is not already) exported for arguments of these (shape, dtype)
    pairs: the bytes of `jax.export.Exported.serialize()`."""
    import jax

    structs = [jax.ShapeDtypeStruct(tuple(int(d) for d in shape), dtype) for shape, dtype in specs]
    target = fn if hasattr(fn, "lower") and hasattr(fn, "trace") else jax.jit(fn)
    return bytes(jax.export.export(target)(*structs).serialize())
