"""performance-08's probes: meshes, sharded programs and placed calls, built in the student's process.

The trusted side (`perfcourse.checks.sharding`) picks the mesh (which devices, in which order, of
which shape), the shapes and the call sequences at grading time, and calls the student's functions
itself. Here only what needs this process's devices is built:

- `mesh`: a Mesh of this process's devices, which stays here: the trusted side holds a stand-in and
  hands it straight to the student's `data_parallel` / `weights_split`;
- `export_step`: the lesson's step exported (`jax.export`) with the shardings the student's function
  returned, as bytes the trusted side deserializes, compiles on devices of its own and runs on values
  this process never sees; and, as evidence, which of this process's devices holds which block;
- `export_gradient`: the function the student's `grad_with_psum` returned (a `shard_map` over a mesh
  built here), exported with w whole and the rows of x and y split over the mesh's "data" axis, as
  bytes the trusted side deserializes, reads, compiles on devices of its own and runs;
- `compile_setup`: a fresh jitted step and the placed arguments of a call sequence, some placements
  run before (the trusted side says which), which stay here: the trusted side hands them straight to
  the student's `compiles_per_call`.

The devices are the lesson's (`lesson_devices`): this process's own, or, on a runtime with fewer than
eight devices on its default backend (a one-chip TPU, one GPU), the host CPU's, as the lesson's
first cell chooses them.

Nothing here judges.
"""
from __future__ import annotations

from .programs import as_jitted

PROBES = ("devices", "mesh", "export_step", "export_gradient", "compile_setup")
LESSON_DEVICES = 8  # the lesson's first cell: eight devices of this runtime, or the host CPU's
NAMES = ("w", "x", "y")  # the step's arguments, in order


def lesson_devices() -> list:
    """The devices the lesson runs on, chosen as its first cell chooses them: eight of this process's
    devices where its default backend has that many, else the host CPU's."""
    import jax

    if jax.device_count() >= LESSON_DEVICES:
        return jax.devices()[:LESSON_DEVICES]
    try:
        return jax.devices("cpu")
    except RuntimeError:  # no CPU backend in reach: the devices there are
        return jax.devices()


def devices() -> dict:
    """How many devices the lesson has here, and of what platform."""
    found = lesson_devices()
    return {"count": len(found), "platform": found[0].platform}


def mesh(order, shape, axes):
    """A Mesh over lesson_devices()[i] for i in `order`, laid out as `shape`, with axis names `axes`."""
    import numpy as np
    from jax.sharding import Mesh

    everything = lesson_devices()
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


def export_gradient(fn, on, shapes: dict) -> dict:
    """`fn` (what the student's grad_with_psum returned for the mesh `on`, built here by `mesh`)
    exported for float32 w, x, y of `shapes`, w whole on that mesh and the rows of x and y split over
    its "data" axis: `jax.export` bytes."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    specs = {"w": P(), "x": P("data", None), "y": P("data", None)}
    try:
        structs = [jax.ShapeDtypeStruct(tuple(int(d) for d in shapes[name]), np.float32,
                                        sharding=NamedSharding(on, specs[name])) for name in NAMES]
        target = as_jitted(fn)
        return {"program": bytes(jax.export.export(target, platforms=("cpu",))(*structs).serialize())}
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:500]}


def _placed(kind: dict, arrays: list):
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    if kind["kind"] == "uncommitted":
        return tuple(jax.numpy.asarray(a) for a in arrays)
    if kind["kind"] == "device":
        device = lesson_devices()[int(kind["index"])]
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
