"""performance-05's probes: what only the student's process can build, for inputs the trusted side picks.

The trusted side believes none of it. Where a check needs a program built from the student's
functions (the network of the student's layer, its gradient, the hand-written recurrence), the
probe exports it with `jax.export` and returns the serialized bytes: the trusted side
deserializes each program, reads it, compiles it and runs it on inputs it picks, and judges what
it computes and how (`perfcourse.checks.remat`). A replaced probe can send other bytes; they
then have to be programs that pass those checks.

`residual_descriptions` is the one probe that reports something the trusted side cannot see
itself: whether the student's function printed while it ran. The lines it returns are not used
for the verdict; the trusted side calls the student's function itself for those.
"""
from __future__ import annotations

import contextlib
import io

PROBES = ("residual_descriptions", "remat_programs", "network_program", "recurrence_program")


def residual_descriptions(describe, fn, *arrays):
    """The student's `describe(fn, *arrays)` with its printed output captured."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        lines = describe(fn, *arrays)
    return {"lines": lines, "printed": printed.getvalue()}


def network_of(apply_layer, depth: int):
    """`depth` applications of `apply_layer`, then the squared length: the lesson's network."""
    import jax.numpy as jnp

    def network(v):
        for _ in range(depth):
            v = apply_layer(v)
        return jnp.sum(v * v)
    return network


def _export(fn, *structs) -> bytes:
    import jax

    return bytes(jax.export.export(jax.jit(fn))(*structs).serialize())


def remat_programs(apply_layer, depths, width: int):
    """Programs for networks of the student's layer, one network for each depth:

    layer       v -> apply_layer(v)
    and for each depth, in order:
    forward     v -> (network(v), the values reverse-mode autodiff saves: the leaves of jax.vjp's
                backward function)
    backward    (those values, cotangent) -> the gradient, from the saved values alone
    """
    import jax
    import jax.numpy as jnp

    vector = jax.ShapeDtypeStruct((int(width),), jnp.float32)
    networks = []
    for depth in depths:
        network = network_of(apply_layer, int(depth))
        saved = {}

        def forward(v, network=network, saved=saved):
            value, pullback = jax.vjp(network, v)
            leaves, saved["tree"] = jax.tree_util.tree_flatten(pullback)
            return value, leaves

        forward_program = jax.export.export(jax.jit(forward))(vector)

        def backward(leaves, cotangent, tree=saved["tree"]):
            return jax.tree_util.tree_unflatten(tree, leaves)(cotangent)

        leaves = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in forward_program.out_avals[1:]]
        networks.append({"forward": bytes(forward_program.serialize()),
                         "backward": _export(backward, leaves, jax.ShapeDtypeStruct((), jnp.float32))})
    return {"layer": _export(apply_layer, vector), "networks": networks}


def network_program(apply_layer, depth: int, width: int) -> bytes:
    """The network of the student's layer: v -> (its value, jax.grad's gradient)."""
    import jax
    import jax.numpy as jnp

    return _export(jax.value_and_grad(network_of(apply_layer, int(depth))),
                   jax.ShapeDtypeStruct((int(width),), jnp.float32))


def recurrence_program(recurrence, width: int, depth: int) -> bytes:
    """The student's recurrence as one program of (v, weight) at this depth, float32 arguments.

    A recurrence written with NumPy cannot be traced, and this raises: the trusted side then
    judges it by what it returns for float64 arguments.
    """
    import jax
    import jax.numpy as jnp

    depth = int(depth)
    return _export(lambda v, weight: recurrence(v, weight, depth),
                   jax.ShapeDtypeStruct((int(width),), jnp.float32),
                   jax.ShapeDtypeStruct((int(width), int(width)), jnp.float32))
