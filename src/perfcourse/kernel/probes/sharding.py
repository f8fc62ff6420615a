"""performance-08's probes: meshes, sharded programs and placed calls, built in the student's process.

The trusted side (`perfcourse.checks.sharding`) picks the mesh (which devices, in which order, of
which shape), the shapes and the call sequences at grading time, and calls the student's functions
itself. Here only what needs this process's devices is built:

- `mesh`: a Mesh of this process's devices, which stays here: the trusted side holds a stand-in and
  hands it straight to the student's `data_parallel` / `weights_split`;
- `export_step`: the lesson's step exported (`jax.export`) with the shardings the student's function
  returned, as bytes the trusted side deserializes, compiles on devices of its own and runs on values
  this process never sees; and, as evidence, which of this process's devices holds which block;
- `compile_setup`: a fresh jitted step and the placed arguments of a call sequence, some placements
  run before (the trusted side says which), which stay here: the trusted side hands them straight to
  the student's `compiles_per_call`.

Nothing here judges.
"""
from __future__ import annotations

PROBES = ("devices", "mesh", "export_step", "compile_setup")
NAMES = ("w", "x", "y")  # the step's arguments, in order


def devices() -> dict:
    """How many devices this process has, and of what platform."""
    import jax

    return {"count": jax.device_count(), "platform": jax.default_backend()}


def mesh(order, shape, axes):
    """A Mesh over jax.devices()[i] for i in `order`, laid out as `shape`, with axis names `axes`."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    everything = jax.devices()
    grid = np.array([everything[int(i)] for i in order], dtype=object).reshape(tuple(int(s) for s in shape))
    return Mesh(grid, tuple(str(a) for a in axes))


def lesson_step(learning_rate: float):
    """A fresh jitted copy of the lesson's step: one SGD step of mean((tanh(x @ w) - y)**2) in w."""
    import jax
    import jax.numpy as jnp

    def loss_fn(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    def sgd_step(w, x, y):
        loss, grad = jax.value_and_grad(loss_fn)(w, x, y)
        return w - learning_rate * grad, loss

    return jax.jit(sgd_step)


def shards(array) -> list:
    """Each addressable shard as {"device": id, "index": [[start, stop], ...], "shape": [...]}."""
    found = []
    for shard in array.addressable_shards:
        index = []
        for dim, part in zip(array.shape, shard.index):
            start, stop, _ = part.indices(dim)
            index.append([int(start), int(stop)])
        found.append({"device": int(shard.device.id), "index": index, "shape": [int(d) for d in shard.data.shape]})
    return sorted(found, key=lambda s: (s["device"], s["index"]))


def export_step(shardings, shapes: dict, learning_rate: float) -> dict:
    """The lesson's step exported for float32 arguments of `shapes` laid out with `shardings` (the
    student's function's answer for a mesh the trusted side picked): `jax.export` bytes; and the
    blocks each device holds of arrays placed with them."""
    import jax
    import numpy as np

    report = {}
    try:
        chosen = [shardings[name] for name in NAMES]
        placed = [jax.device_put(np.zeros(tuple(shapes[name]), np.float32), s) for name, s in zip(NAMES, chosen)]
    except Exception as exc:
        report["raised"] = f"{type(exc).__name__}: {exc}"[:500]
        return report
    report["placed"] = {name: shards(array) for name, array in zip(NAMES, placed)}
    try:
        structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) for a, s in zip(placed, chosen)]
        exported = jax.export.export(lesson_step(float(learning_rate)), platforms=("cpu",))(*structs)
        report["program"] = bytes(exported.serialize())
    except Exception as exc:
        report["step_raised"] = f"{type(exc).__name__}: {exc}"[:500]
    return report


def _placed(kind: dict, arrays: list):
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    if kind["kind"] == "uncommitted":
        return tuple(jax.numpy.asarray(a) for a in arrays)
    if kind["kind"] == "device":
        device = jax.devices()[int(kind["index"])]
        return tuple(jax.device_put(a, device) for a in arrays)
    on = mesh(kind["order"], [len(kind["order"])], ["data"])
    batch = P() if kind["kind"] == "replicated" else P("data", None)
    specs = (P(), batch, batch)
    return tuple(jax.device_put(a, NamedSharding(on, spec)) for a, spec in zip(arrays, specs))


def compile_setup(placements: list, warm: list, shapes: dict, seed: int, learning_rate: float) -> dict:
    """A fresh jitted step, already called once on each placement of `warm`, and the arguments of
    a call sequence placed as `placements` say (fresh values for every call)."""
    import jax
    import numpy as np

    rng = np.random.default_rng(int(seed))
    b, d, o = int(shapes["batch"]), int(shapes["inputs"]), int(shapes["outputs"])

    def arguments(kind):
        return _placed(kind, [rng.standard_normal(shape, dtype=np.float32) for shape in ((d, o), (b, d), (b, o))])

    step = lesson_step(float(learning_rate))
    for kind in warm:
        jax.block_until_ready(step(*arguments(kind)))
    return {"step": step, "calls": [arguments(kind) for kind in placements]}
