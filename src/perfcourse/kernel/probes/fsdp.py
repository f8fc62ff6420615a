"""performance-11's probe: the student's FSDP step exported for a mesh and shapes the trusted side picked.

The trusted side (`perfcourse.checks.fsdp`) builds the mesh here through performance-08's probe
(`sharding.mesh`), calls the student's `fsdp_step` on it itself, and hands the function it returned
to `export_step`, which exports it (`jax.export`) with the stacked weights (layers, width, width)
split by rows of every layer and the batch split by rows over the mesh's "fsdp" axis. The bytes go
back to be read, compiled on the trusted side's own devices and run on values this process never
sees. Nothing here judges.
"""
from __future__ import annotations

from .programs import as_jitted

PROBES = ("export_step",)


def export_step(fn, on, shapes: dict) -> dict:
    """`fn` exported for float32 stacked weights of `shapes["stacked"]` ([layers, width, width]) split
    by P(None, "fsdp", None), and a batch x, y of `shapes["x"]`, `shapes["y"]` split by rows."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    try:
        def struct(shape, spec):
            return jax.ShapeDtypeStruct(tuple(int(d) for d in shape), np.float32, sharding=NamedSharding(on, spec))

        stacked = struct(shapes["stacked"], P(None, "fsdp", None))
        x, y = struct(shapes["x"], P("fsdp", None)), struct(shapes["y"], P("fsdp", None))
        exported = jax.export.export(as_jitted(fn), platforms=("cpu",))(stacked, x, y)
        return {"program": bytes(exported.serialize())}
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:500]}
