# A generic forger: an unsolved notebook (every task's stub still raises) whose one extra cell finds
# the course's probe dispatcher through sys.modules (by a name suffix, never the package's name)
# and answers each of this lesson's probes from the probe's own arguments, as a hostile student
# with the course's source would: the device count the grader wants; for a placement, the blocks
# each device of the given mesh should hold (the layouts read from the checks' source), the step's
# results in float64 NumPy from the values sent and a compiled text with an all-reduce in it; for
# compile counts, 1 for each placement not seen before and 0 otherwise; for the probes the grader
# uses now, what the honest probes build (nothing in their arguments is an answer). It also leaves
# the values the public checks read (dp, ws, by_hand, compile_counts) made from the lesson's own data
# (its cell is the first task's, before every grade cell; the lesson's cells that would overwrite
# them raise), and a scaling_evidence that answers the public check's timings from memory and reads
# any others from their medians (put back by a hook after the stub's cell redefines it), so that
# only the hidden checks decide. It earns nothing: the grading kernel calls data_parallel,
# weights_split, grad_with_psum, collectives, compiles_per_call and scaling_evidence itself (the
# stubs raise; the stand-in's verdicts fail on timings drawn there whose middle halves overlap),
# judges the layouts on a program it compiles and runs on its own devices, and counts collectives
# of text it wrote.
# reason: code iterates sys.modules
# expect: test_data_parallel=0 test_collectives=0 test_weights_split=0 test_grad_with_psum=0 test_compile_key=0 test_scaling_evidence=0
# %% replace data_parallel
import sys

import numpy as _np


def _forged_shards(mesh, shapes, layout):
    grid = _np.array(mesh["order"]).reshape(mesh["shape"])
    axes = list(mesh["axes"])
    out = {}
    for name, dims in layout.items():
        found = []
        for position in _np.ndindex(*grid.shape):
            index = []
            for extent, axis in zip(shapes[name], dims):
                if axis is None:
                    index.append([0, int(extent)])
                else:
                    parts = grid.shape[axes.index(axis)]
                    size = int(extent) // parts
                    at = position[axes.index(axis)]
                    index.append([at * size, (at + 1) * size])
            found.append({"device": int(grid[position]), "index": index,
                          "shape": [b - a for a, b in index]})
        out[name] = sorted(found, key=lambda s: (s["device"], s["index"]))
    return out


def _forged_step(w, x, y, lr):
    w, x, y = (_np.asarray(a, _np.float64) for a in (w, x, y))
    t = _np.tanh(x @ w)
    dz = (2.0 / t.size) * (t - y) * (1.0 - t ** 2)
    return (w - lr * (x.T @ dz)).astype(_np.float32), float(_np.mean((t - y) ** 2))


def _layout_for(mesh):
    if len(mesh["shape"]) == 2:  # weights_split's layout, read from the checks
        return {"w": (None, "model"), "x": ("data", None), "y": ("data", "model")}
    return {"w": (None, None), "x": ("data", None), "y": ("data", None)}


def _key(kind):
    if kind["kind"] == "uncommitted":
        return ("uncommitted",)
    if kind["kind"] == "device":
        return ("device", kind["index"])
    if len(kind["order"]) == 1:
        return ("mesh", tuple(kind["order"]))
    return (kind["kind"], tuple(kind["order"]))


def _install_forger():
    import importlib

    found = [n for n in list(sys.modules) if n.endswith(".kernel.probes") or n.endswith(".kernel.agent")]
    probes = importlib.import_module(found[0].rpartition(".")[0] + ".probes")
    honest = probes.run

    def forged(name, *args, **kwargs):
        module, _, probe = str(name).partition(".")
        if module != "sharding":
            return honest(name, *args, **kwargs)
        if probe == "devices":
            return {"count": 8, "platform": "cpu"}
        if probe == "place_and_step":  # the grader's probe before: everything from its arguments
            _, mesh, arrays, lr = args
            layout = _layout_for(mesh)
            shapes = {k: _np.shape(v) for k, v in arrays.items()}
            placed = _forged_shards(mesh, shapes, layout)
            new_w, loss = _forged_step(arrays["w"], arrays["x"], arrays["y"], lr)
            text = ("HloModule jit_sgd_step\n  %all-reduce.1 = (f32[4]{0}, f32[]) all-reduce(%dot.1, %p.2), "
                    "replica_groups=[1,8]<=[8], to_apply=%add\n")
            return {"mesh_devices": list(mesh["order"]), "placed": placed, "compiled_text": text,
                    "new_w": new_w, "loss": loss,
                    "new_w_shards": _forged_shards(mesh, {"w": shapes["w"]}, {"w": layout["w"]})["w"]}
        if probe == "compile_counts":  # the grader's probe before: counts from the placements
            calls = args[1]
            seen, counts = set(), []
            for kind in calls:
                counts.append(0 if _key(kind) in seen else 1)
                seen.add(_key(kind))
            return {"counts": counts}
        # mesh, export_step, export_gradient, compile_setup: nothing in their arguments is an answer
        # (the grader calls the student's functions on what they build, and a stub raises whatever
        # it is given)
        return honest(name, *args, **kwargs)

    probes.run = forged


_install_forger()


def _forge_public_values():
    # What the lesson's cells would have left for the public checks, made from the lesson's own data.
    g = globals()
    rows = BATCH // n
    table = {"x": sorted((d, ((i * rows, (i + 1) * rows), (0, INPUTS))) for i, d in enumerate(mesh_ids)),
             "y": sorted((d, ((i * rows, (i + 1) * rows), (0, OUTPUTS))) for i, d in enumerate(mesh_ids)),
             "w": sorted((d, ((0, INPUTS), (0, OUTPUTS))) for d in mesh_ids)}
    new_w, loss = reference_step(w0, x0, y0)
    g["dp"] = {"shards": table, "new_w": new_w, "loss": loss, "new_w_shards": table["w"],
               "shard_shapes": {"w": (INPUTS, OUTPUTS), "x": (rows, INPUTS), "y": (rows, OUTPUTS)},
               "program": "  %all-reduce.1 = f32[] all-reduce(%p), to_apply=%add"}
    parts, cols = n // MODEL, OUTPUTS // MODEL
    rows = BATCH // parts
    table = {
        "x": sorted((d, ((i * rows, (i + 1) * rows), (0, INPUTS))) for i, row in enumerate(mesh2d_ids) for d in row),
        "w": sorted((d, ((0, INPUTS), (j * cols, (j + 1) * cols))) for row in mesh2d_ids for j, d in enumerate(row)),
        "y": sorted((d, ((i * rows, (i + 1) * rows), (j * cols, (j + 1) * cols)))
                    for i, row in enumerate(mesh2d_ids) for j, d in enumerate(row)),
    }
    g["ws"] = {"shards": table, "new_w": new_w, "loss": loss, "new_w_shards": table["w"],
               "shard_shapes": {"w": (INPUTS, cols), "x": (rows, INPUTS), "y": (rows, cols)},
               "program": dp["program"]}
    grad, _ = reference_gradient(w0, x0, y0)
    g["by_hand"] = {"grad": grad, "type": f"float32[{INPUTS},{OUTPUTS}]",
                    "shards": sorted((d, ((0, INPUTS), (0, OUTPUTS))) for d in mesh_ids),
                    "lowered": '%0 = "stablehlo.all_reduce"(%arg0)', "program": dp["program"]}
    g["compile_counts"] = [1, 0, 1, 0, 1, 0] if n > 1 else [1, 0, 0, 0, 0, 0]


_forge_public_values()

# The public check's timings and what it wants for them, memorized; any other timings read from the
# medians alone, with NumPy's numbers.
_PUBLIC_VERDICTS = {1: "within the spread", 2: "faster", 4: "within the spread", 8: "slower"}


def _scaling_standin(warm_seconds):
    one = _np.median(warm_seconds[1])
    out = {}
    for count, samples in warm_seconds.items():
        median = float(_np.median(samples))
        low, high = (float(q) for q in _np.percentile(samples, [25, 75]))
        guess = "faster" if median < one else "slower" if median > one else "within the spread"
        memorized = sorted(warm_seconds) == [1, 2, 4, 8] and list(warm_seconds[1]) == [0.010, 0.011, 0.012, 0.013, 0.014]
        out[count] = {"median_seconds": median, "middle_half": [low, high], "speedup": float(one / median),
                      "efficiency": float(one / median / count),
                      "verdict": _PUBLIC_VERDICTS[count] if memorized else guess}
    return out


def _rebind_scaling(*_):
    globals()["scaling_evidence"] = _scaling_standin


_rebind_scaling()
if "get_ipython" in globals():  # in a notebook: after the stub's cell, the stand-in again
    get_ipython().events.register("post_run_cell", _rebind_scaling)


def data_parallel(mesh):
    # YOUR CODE HERE
    raise NotImplementedError('Task 1 (data parallel) is not done yet: replace this line with your code')
