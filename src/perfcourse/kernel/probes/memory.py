"""performance-09's probes: the student's `live_memory` called beside held arrays, and programs
built from the student's functions, exported as bytes.

The trusted side (`perfcourse.checks.memory`) calls most of the student's functions itself, over
the channel. Three things it cannot do from there. It cannot hold arrays in the student's process
beside the ones `live_memory` is handed (`live_memory_beside`; the student's function returns plain
values, judged there). And, since they need JAX to trace the student's code in the student's
process, it cannot export the student's donating update, nor the gradient programs of the
student's rematerialized network: each of those probes returns `jax.export` bytes; the trusted side
deserializes, reads, compiles and runs them itself (`perfcourse.checks.programs.program_from`). A
replaced probe can send other bytes: they then have to be programs that pass those checks, which
is the work the lesson asks for.

Nothing here judges.
"""
from __future__ import annotations

from .programs import as_jitted

PROBES = ("live_memory_beside", "export_update", "export_gradients")


def live_memory_beside(live_memory, arrays, given: int, device):
    """The student's `live_memory(arrays[:given], device)`, called while this process holds every
    one of `arrays` as a JAX array: the arrays given are then never all that `jax.live_arrays()`
    lists (sent over the channel, they would otherwise be this process's only arrays)."""
    import jax.numpy as jnp

    held = [jnp.asarray(a) for a in arrays]
    result = live_memory(held[: int(given)], device)
    del held  # held until the call returned
    return result


def export_update(make_update, shapes, params_dtype="float32"):
    """The student's `make_update()` exported for params {name: array of shape, `params_dtype`},
    grads of the same shapes in float32 and a float32 learning rate: `update(params, grads, lr)`,
    as `jax.export` bytes."""
    import jax
    import jax.numpy as jnp

    update = make_update()
    tree = {str(name): jax.ShapeDtypeStruct(tuple(int(d) for d in shape), jnp.float32)
            for name, shape in dict(shapes).items()}
    params = {name: jax.ShapeDtypeStruct(leaf.shape, jnp.dtype(str(params_dtype))) for name, leaf in tree.items()}
    # A function that is not jitted yet is jitted here as it is (without donation): its export
    # then shows what the student's function asked for, which is nothing.
    target = as_jitted(update)
    return bytes(jax.export.export(target)(params, tree, jax.ShapeDtypeStruct((), jnp.float32)).serialize())


POLICIES = ("none", "dots_saveable", "nothing_saveable")


def policy_named(name: str):
    """None for "none", else `jax.checkpoint_policies.<name>`."""
    import jax

    if name == "none":
        return None
    if name not in POLICIES:
        raise ValueError(f"no policy named {name!r}")
    return getattr(jax.checkpoint_policies, name)


def export_gradients(remat_loss, names, layers: int, batch: int, width: int):
    """For each policy name, `jax.grad` of the student's `remat_loss(policy)` in the weights,
    exported for weights (layers, width, width) and inputs (batch, width), float32: {name: bytes}."""
    import jax
    import jax.numpy as jnp

    weights = jax.ShapeDtypeStruct((int(layers), int(width), int(width)), jnp.float32)
    inputs = jax.ShapeDtypeStruct((int(batch), int(width)), jnp.float32)
    programs = {}
    for name in names:
        loss = remat_loss(policy_named(str(name)))
        programs[str(name)] = bytes(jax.export.export(jax.jit(jax.grad(loss)))(weights, inputs).serialize())
    return programs
