"""performance-08's probes: meshes, placements, sharded steps and compile counts, built in the student's process.

The trusted side (`perfcourse.checks.sharding`) picks the mesh (which devices, in which order, of
which shape), the arrays and the call sequences at grading time. Here the student's functions are
applied to them, and what JAX made of it comes back as plain data: which device holds which block
of each array, the step's results as NumPy arrays, the compiled program's text, compile counts.

Nothing here judges.
"""
from __future__ import annotations

PROBES = ("devices", "place_and_step", "compile_counts")
NAMES = ("w", "x", "y")  # the step's arguments, in order


def devices() -> dict:
    """How many devices this process has, and of what platform."""
    import jax

    return {"count": jax.device_count(), "platform": jax.default_backend()}


def make_mesh(order, shape, axes):
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


def place_and_step(shardings_of, mesh_spec: dict, arrays: dict, learning_rate: float) -> dict:
    """The student's `shardings_of(mesh)` for a mesh picked on the trusted side; the arrays placed with
    them; one step of the lesson's workload on them (a fresh jit), its results and compiled program."""
    import jax
    import numpy as np

    mesh = make_mesh(mesh_spec["order"], mesh_spec["shape"], mesh_spec["axes"])
    report = {"mesh_devices": [int(d.id) for d in mesh.devices.flat]}
    try:
        shardings = shardings_of(mesh)
        placed = [jax.device_put(np.asarray(arrays[name], dtype=np.float32), shardings[name]) for name in NAMES]
    except Exception as exc:
        report["raised"] = f"{type(exc).__name__}: {exc}"[:500]
        return report
    report["placed"] = {name: shards(array) for name, array in zip(NAMES, placed)}
    step = lesson_step(float(learning_rate))
    try:
        compiled = step.lower(*placed).compile()
        new_w, loss = jax.block_until_ready(compiled(*placed))
    except Exception as exc:
        report["step_raised"] = f"{type(exc).__name__}: {exc}"[:500]
        return report
    report["compiled_text"] = compiled.as_text() or ""
    report["new_w"] = np.asarray(new_w)
    report["loss"] = float(loss)
    report["new_w_shards"] = shards(new_w)
    return report


def _placed(kind: dict, arrays: list):
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    if kind["kind"] == "uncommitted":
        return tuple(jax.numpy.asarray(a) for a in arrays)
    if kind["kind"] == "device":
        device = jax.devices()[int(kind["index"])]
        return tuple(jax.device_put(a, device) for a in arrays)
    mesh = make_mesh(kind["order"], [len(kind["order"])], ["data"])
    batch = P() if kind["kind"] == "replicated" else P("data", None)
    specs = (P(), batch, batch)
    return tuple(jax.device_put(a, NamedSharding(mesh, spec)) for a, spec in zip(arrays, specs))


def compile_counts(compiles_per_call, placements: list, shapes: dict, seed: int, learning_rate: float):
    """The student's `compiles_per_call(fn, calls)` on a fresh jitted step and a call sequence whose
    placements the trusted side picked (fresh values on every call)."""
    import numpy as np

    rng = np.random.default_rng(int(seed))
    b, d, o = int(shapes["batch"]), int(shapes["inputs"]), int(shapes["outputs"])
    calls = []
    for kind in placements:
        arrays = [rng.standard_normal(shape, dtype=np.float32) for shape in ((d, o), (b, d), (b, o))]
        calls.append(_placed(kind, arrays))
    step = lesson_step(float(learning_rate))
    try:
        counts = compiles_per_call(step, calls)
        return {"counts": [int(c) for c in counts]}
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:500]}
