"""Grade performance-08 (Eight devices): placements on meshes picked at grading time, never a speed-up.

Students write `data_parallel(mesh)` and `weights_split(mesh)`, each returning the
`NamedSharding`s of the lesson's step `sgd_step(w, x, y)` (one SGD step of
mean((tanh(x @ w) - y)**2)); `collectives(hlo_text)`, which counts the collective operations of a
compiled program by kind; `grad_with_psum(mesh)`, the step's gradient as a `jax.shard_map` whose
function sums the devices' parts with `jax.lax.psum`; `compiles_per_call(fn, calls)`, which counts
the compiles each call of a jitted function causes; and `scaling_evidence(warm_seconds)`, what
timings at several device counts show: each count's median and middle half, its speed-up over one
device and its efficiency against the ideal, and whether it is faster or slower than one device
by performance-01's middle halves. (The lesson times the step with the course's timer, given: the
one performance-01 teaches and grades.)

What this kernel believes, it observed or verified itself; what it cannot, it names as evidence:

- test_data_parallel (`check_data_parallel`). In every run, a mesh of all the process's devices
  and one of fewer of them, each in a shuffled order, is built in the student's process (probe
  `sharding.mesh`) and stays there; *this kernel calls* `data_parallel` on it (a call over the
  channel, never through a probe), and the shardings it returns go, unread, to the probe
  `sharding.export_step`, which exports the lesson's step laid out with them (`jax.export`).
  *Verified* here (`checks.programs.program_from`, then `verify_program`): the program spans as
  many devices as the mesh; each argument's layout (its HLO sharding, read against the mesh's own
  order): the batch (x and y) split into equal blocks of rows, block i on the mesh's i-th device,
  all columns; w whole on every device; then, compiled here on CPU devices of a client this kernel
  makes for itself (`own_devices`: the trusted kernel's JAX has one device) and run on fresh values
  that never leave this kernel: the new weights and loss equal to a float64 NumPy step (tolerance
  of the matrix-product precision measured here, `checks.numerics`), the new weights whole on
  every device, and the compiled text, read here, summing gradients across devices (an all-reduce
  or a reduce-scatter) where the mesh has several. *Evidence only*: which of the student's
  devices holds which block (the probe's report of arrays placed with the shardings): an exported
  program names devices by their place in the mesh, never by id, so a mesh of the process's own
  devices in another order shows only there.
- test_weights_split (`check_weights_split`): the same on a 2-D mesh ("data", "model") of a shape
  and device order picked here: x split by rows over "data"; w by columns over "model"; y by rows
  and columns; the new weights keep w's column split (*verified*; device ids *evidence only*).
- test_collectives (`check_collectives`): *observed*, values only. This kernel calls `collectives`
  on HLO text written here, with fresh counts of each kind, asynchronous start/done pairs (one
  collective each), instruction names that lie both ways (a collective named after another kind
  or after nothing, `%fusion.3`, `%all_gather.7`; an add or a copy named `%all-reduce.5`), metadata
  and operands that mention a kind: the counts must be exact, so a counter that reads names loses.
- test_grad_with_psum (`check_grad_with_psum`). Each 1-D mesh of test_data_parallel's (all devices
  and fewer, every run: a count of the process's devices instead of the mesh's fails the smaller) is
  built in the student's process; *this kernel calls* `grad_with_psum` on it, and the function it returns goes,
  unread, to the probe `sharding.export_gradient`, which exports it with w whole and the rows of x
  and y split over the mesh (`jax.export`). *Verified* here: the program spans the mesh's devices;
  its StableHLO, the program before XLA's passes, holds a collective sum (`stablehlo.all_reduce` or
  `reduce_scatter`: what `psum` inside `shard_map` writes; a `jax.jit` gradient holds none before
  the partitioner runs) where the mesh has several devices; compiled here on this kernel's own
  devices and run on fresh values that never leave this kernel, it gives the float64 gradient of
  the whole batch (tolerance of the precision measured here), whole on every device. A gradient
  left to `jax.grad` inside `shard_map` (whose transpose sums across devices by itself) computes
  the same and passes; a psum on top of it counts every part n times and fails.
- test_compile_key (`check_compile_key`). A fresh jitted step and a call sequence of placements
  picked here (uncommitted, committed to one device, batch split or replicated over meshes in
  different device orders; fresh values on every call) are built in the student's process (probe
  `sharding.compile_setup`), with one or two of the sequence's placements run once before, chosen
  here; *this kernel calls* `compiles_per_call` on them. Each call must count 1 compile where its
  placement is new to the function and 0 where the function has seen it, in the sequence or
  before it, so counts derived from the arguments' placements fail: only counting JAX's compiles
  passes. *Evidence only*: the compile events exist only in the student's process (see the limit
  below).
- test_scaling_evidence (`check_scaling_evidence`): *observed*, values only. This kernel draws
  timings here (a few device counts besides one, from 5 to 16 warm samples each, odd and even
  counts, some with a busy moment's outlier), built so that between them every verdict occurs,
  among them counts whose median is below or above one device's while the middle halves overlap,
  and no quartile lies within a millionth of the one it is compared with, but for one count whose
  middle half touches one device's exactly (`halves.touching`); it calls `scaling_evidence` on them
  and compares every entry with its own float64 computation (`expected_scaling`): medians, middle
  halves (performance-01's rule, `checks.halves`), speed-up and efficiency to 1e-9 relative, the
  verdict exactly. A verdict read from the medians alone, touching middle halves read as apart, a
  mean for a median, or an efficiency that forgets the device count fails. A forger would have to do
  the arithmetic for timings it sees only at grading time.

What a forger would have to do: replacing the course's probes in its own kernel earns nothing,
since the student's own functions are called by this kernel and an unsolved one raises. For the
layout cells it would have to send a program that, compiled and run here, splits the arguments as
the layout asks and computes the step: the solution, wherever it is written; for the psum cell, a
program that sums across devices before XLA's passes and computes the whole batch's gradient.
Limit (docs/authors/checks.md, "Known limits"): compile counts are evidence; a submission that
replaced the setup probe and also bound `compiles_per_call` (or replaced the channel's agent to
answer its call) to return counts derived from what that probe was told (the placements and the
warm ones) would pass. The device count is
the student's process's own report (evidence); a program honestly exported for a mesh of all
GRADED_DEVICES devices needs that many. When grading
(the trusted kernel, on the CPU kernel grader_config.py names) the count must be GRADED_DEVICES, the
count the lesson's first cell asks XLA's CPU backend for: a notebook whose first cell did not run
first fails. Where the checks share the notebook's process (artifacts on a one-GPU machine, the
tests) they run on the devices there are.
"""
from __future__ import annotations

import random
import re

import numpy as np

from . import CheckFailed, InstrumentMissing, halves, numerics, programs, remote, verdict
from .roofline import key_problems
from .student_calls import call_student, one_line

LEARNING_RATE = 0.1
GRADED_DEVICES = 8   # the lesson's first cell: --xla_force_host_platform_device_count=8
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
SUMMING = ("all-reduce", "reduce-scatter")
# An HLO instruction: `%name = shape kind(` or `name = shape kind-start(`; a name (%all-reduce.3),
# an op_name in metadata or a fused computation's name is not one.
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s(" + "|".join(KINDS) + r")(-start|-done)?\(")


# --- reading a compiled program -----------------------------------------------------------------
def count_collectives(hlo_text: str) -> dict:
    """{kind: count} of the collective instructions in HLO text (an async start/done pair counts once)."""
    found = {}
    for line in str(hlo_text).splitlines():
        match = _INSTRUCTION.match(line)
        if match and match.group(2) != "-done":
            found[match.group(1)] = found.get(match.group(1), 0) + 1
    return found


# --- what the step computes, in float64 ---------------------------------------------------------
def reference_gradient(w, x, y):
    """Gradient in w and loss of mean((tanh(x @ w) - y)**2), in float64 NumPy."""
    w, x, y = (np.asarray(a, dtype=np.float64) for a in (w, x, y))
    t = np.tanh(x @ w)
    r = t - y
    loss = float(np.mean(r ** 2))
    dz = (2.0 / r.size) * r * (1.0 - t ** 2)
    return x.T @ dz, loss


def reference_step(w, x, y, learning_rate: float = LEARNING_RATE):
    """New weights and loss of one SGD step of mean((tanh(x @ w) - y)**2), in float64 NumPy."""
    grad, loss = reference_gradient(w, x, y)
    return np.asarray(w, dtype=np.float64) - learning_rate * grad, loss


# --- meshes and layouts -------------------------------------------------------------------------
def device_count() -> int:
    found = remote.probe("sharding.devices")
    try:
        count = int(found["count"])
    except (TypeError, KeyError, ValueError):
        raise CheckFailed("the notebook's process did not say how many devices it has") from None
    if count < 1:
        raise CheckFailed("the notebook's process reports no devices")
    if remote.grading() and count != GRADED_DEVICES:
        raise CheckFailed(f"the notebook's process has {count} device(s), not the {GRADED_DEVICES} CPU devices its "
                          "first cell asks for before JAX starts: keep that cell first and as it is")
    return count


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def one_d_meshes(rng: np.random.Generator, count: int) -> list[dict]:
    """Every run, two meshes (where the count has a divisor between 1 and itself): all devices, and
    fewer of them, each in a shuffled order, in an order drawn here. A sharding that ignores the mesh
    it is given shows on either; a count taken from the process's devices instead of the mesh's
    shows on the smaller one, which is therefore never left to chance."""
    sizes = [d for d in _divisors(count) if 1 < d < count]
    meshes = []
    for k in [count] + ([int(rng.choice(sizes))] if sizes else []):
        order = [int(i) for i in rng.choice(count, size=k, replace=False)]
        if k == count and count > 1:
            while order == list(range(count)):
                order = [int(i) for i in rng.permutation(count)]
        meshes.append({"order": order, "shape": [k], "axes": ["data"]})
    return [meshes[int(i)] for i in rng.permutation(len(meshes))]


def two_d_mesh(rng: np.random.Generator, count: int) -> dict:
    """("data", "model") over all devices, shuffled; a model axis of 2 or more where the count allows."""
    choices = [m for m in _divisors(count) if 1 < m < count] or _divisors(count)
    m = int(rng.choice(choices))
    return {"order": [int(i) for i in rng.permutation(count)], "shape": [count // m, m], "axes": ["data", "model"]}


def blocks(extent: int, parts: int, i: int) -> list[int]:
    size = extent // parts
    return [i * size, (i + 1) * size]


def expected_layout(mesh: dict, shapes: dict, layout: dict) -> dict:
    """{name: sorted [{"device", "index"}]} for arrays laid out on `mesh`.

    `layout[name]` gives, per array dimension, the mesh axis that splits it or None.
    """
    grid = np.array(mesh["order"]).reshape(mesh["shape"])
    axes = list(mesh["axes"])
    expected = {}
    for name, dims in layout.items():
        found = []
        for position in np.ndindex(*grid.shape):
            index = []
            for extent, axis in zip(shapes[name], dims):
                if axis is None:
                    index.append([0, extent])
                else:
                    a = axes.index(axis)
                    index.append(blocks(extent, grid.shape[a], position[a]))
            found.append({"device": int(grid[position]), "index": index})
        expected[name] = sorted(found, key=lambda s: (s["device"], s["index"]))
    return expected


def _plain_shards(shards) -> list | None:
    try:
        return sorted(({"device": int(s["device"]), "index": [[int(a), int(b)] for a, b in s["index"]]}
                       for s in shards), key=lambda s: (s["device"], s["index"]))
    except (TypeError, KeyError, ValueError):
        return None


DESCRIPTIONS = {
    (None, None): "whole on every device of the mesh",
    ("data", None): "split by rows over the 'data' axis (all columns on each device)",
    (None, "model"): "split by columns over the 'model' axis (all rows on each device)",
    ("data", "model"): "split by rows over 'data' and by columns over 'model'",
}


def fresh_arrays(rng: np.random.Generator, rows_per_block: int, batch_parts: int, columns: int, column_parts: int):
    inputs = int(rng.integers(3, 12)) * 4
    batch = batch_parts * rows_per_block
    outputs = column_parts * columns
    w = (rng.standard_normal((inputs, outputs)) / np.sqrt(inputs)).astype(np.float32)
    x = rng.standard_normal((batch, inputs)).astype(np.float32)
    y = rng.uniform(-0.9, 0.9, (batch, outputs)).astype(np.float32)
    return {"w": w, "x": x, "y": y}


_own: list = []


def own_devices(count: int) -> list:
    """`count` CPU devices of a client this kernel makes for itself, whatever its own JAX started
    with (the trusted kernel: one device): programs exported for a mesh are compiled and run on them."""
    if len(_own) < count:
        try:
            from jax._src.lib import xla_client

            client = xla_client.make_cpu_client(num_devices=max(count, GRADED_DEVICES))
        except Exception as exc:
            raise InstrumentMissing(f"this JAX cannot make a CPU client of {count} devices "
                                    f"({type(exc).__name__}: {exc})") from None
        _own[:] = list(client.devices())
    return _own[:count]


def device_blocks(sharding, shape) -> list | None:
    """(place of the device among the mesh's, [[start, stop], ...]) of each block, sorted."""
    try:
        where = {device: i for i, device in enumerate(_own)}
        return sorted((where[device], [list(part.indices(dim)[:2]) for part, dim in zip(index, shape)])
                      for device, index in sharding.devices_indices_map(tuple(shape)).items())
    except Exception:
        return None


def mesh_here(mesh: dict):
    from jax.sharding import Mesh

    devices = own_devices(len(mesh["order"]))
    return Mesh(np.array(devices, dtype=object).reshape(mesh["shape"]), tuple(mesh["axes"]))


def on_devices(hlo, here):
    """The sharding an exported program's HLO sharding means on the devices of `here`, in its order
    (whatever the axis names the student's mesh gave them), or None."""
    try:
        from jax._src.sharding_impls import GSPMDSharding
    except ImportError as exc:
        raise InstrumentMissing(
            f"this JAX has no GSPMDSharding to read an exported program's layouts ({exc})") from None
    try:
        return None if hlo is None else GSPMDSharding(tuple(here.devices.flat), hlo)
    except Exception:
        return None


def verify_program(program, mesh: dict, arrays: dict, layout: dict, what: str, precision: str) -> list[str]:
    """How an exported step departs from `layout` on `mesh`, judged here: its argument layouts,
    then compiled on this kernel's own devices and run on `arrays`: results, the new weights'
    layout, a summed gradient."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    k = len(mesh["order"])
    if program.nr_devices != k:
        return [f"{what}: the step laid out with its shardings runs on {program.nr_devices} device(s), the mesh "
                f"you are given has {k}: build the shardings on that mesh"]
    here = mesh_here(mesh)
    want = {name: NamedSharding(here, P(*layout[name])) for name in ("w", "x", "y")}
    given = [on_devices(hlo, here) for hlo in program.in_shardings_hlo]
    problems = []
    for name, sharding in zip(("w", "x", "y"), given):
        shape = arrays[name].shape
        if sharding is None or device_blocks(sharding, shape) != device_blocks(want[name], shape):
            problems.append(f"{what}: {name} should be {DESCRIPTIONS[tuple(layout[name])]}, each block on the "
                            "mesh's own device for that position (use the mesh you are given)")
    if problems:
        return problems
    try:
        placed = [jax.device_put(arrays[name], want[name]) for name in ("w", "x", "y")]
        compiled = jax.jit(program.call).lower(*placed).compile()
        new_w, loss = compiled(*placed)
        text = compiled.as_text() or ""
        new_w_blocks, got_w, got_loss = device_blocks(new_w.sharding, new_w.shape), np.asarray(new_w), float(loss)
    except Exception as exc:
        return [f"the lesson's step laid out by {what} did not compile and run here ({type(exc).__name__})"]
    want_w, want_loss = reference_step(arrays["w"], arrays["x"], arrays["y"])
    try:
        numerics.check_close(got_w, want_w, f"the step's new weights with {what}'s placement", precision=precision)
        numerics.check_close(np.asarray([got_loss]), np.asarray([want_loss]),
                             f"the step's loss with {what}'s placement", precision=precision)
    except (CheckFailed, TypeError, ValueError) as exc:
        return [str(exc)]
    if new_w_blocks != device_blocks(want["w"], arrays["w"].shape):
        problems.append(f"{what}: the new weights should keep w's layout ({DESCRIPTIONS[tuple(layout['w'])]})")
    if k > 1 and not any(count_collectives(text).get(kind) for kind in SUMMING):
        problems.append(f"{what}: the compiled step sums no gradient across devices (no all-reduce or "
                        "reduce-scatter): the batch is not split the way the step needs")
    return problems


def placement_problems(report, mesh: dict, arrays: dict, layout: dict, what: str, precision: str) -> list[str]:
    """How the export probe's report for `mesh` departs from `layout`: the blocks it says each device
    holds (evidence), then the program it sent (verified here)."""
    if not isinstance(report, dict):
        return [f"{what}: the placement could not be read"]
    if "raised" in report:
        return [f"{what}'s shardings could not place the step's arguments: {report['raised']}"]
    shapes = {name: a.shape for name, a in arrays.items()}
    expected = expected_layout(mesh, shapes, layout)
    placed = report.get("placed") or {}
    problems = []
    for name in ("w", "x", "y"):
        if _plain_shards(placed.get(name) or []) != expected[name]:
            problems.append(f"{what}: {name} should be {DESCRIPTIONS[tuple(layout[name])]}, each block on the "
                            "mesh's own device for that position (use the mesh you are given)")
    if problems:
        return problems
    if "step_raised" in report:
        return [f"the lesson's step could not be laid out with {what}'s shardings: {report['step_raised']}"]
    specs = [(list(shapes[name]), "float32") for name in ("w", "x", "y")]
    try:
        program = programs.program_from(report.get("program"), specs, what=f"the step laid out by {what}")
    except CheckFailed as exc:
        return [str(exc)]
    return verify_program(program, mesh, arrays, layout, what, precision)


def layout_problems(shardings_of, mesh: dict, arrays: dict, layout: dict, what: str, precision: str) -> list[str]:
    """The student's `shardings_of`, called here on a mesh built in the student's process; the step
    laid out with its answer, exported there and judged here."""
    held = remote.stand_in("sharding.mesh", mesh["order"], mesh["shape"], mesh["axes"])
    shardings = call_student(what, shardings_of, held)
    shapes = {name: [int(d) for d in a.shape] for name, a in arrays.items()}
    report = remote.probe("sharding.export_step", shardings, shapes, LEARNING_RATE)
    return placement_problems(report, mesh, arrays, layout, what, precision)


DATA_PARALLEL = {"w": (None, None), "x": ("data", None), "y": ("data", None)}
WEIGHTS_SPLIT = {"w": (None, "model"), "x": ("data", None), "y": ("data", "model")}


def check_data_parallel(data_parallel, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count, precision = device_count(), numerics.matmul_precision()
    problems = []
    for mesh in one_d_meshes(rng, count):
        k = len(mesh["order"])
        arrays = fresh_arrays(rng, int(rng.integers(2, 6)), k, int(rng.integers(3, 9)), 1)
        problems += layout_problems(data_parallel, mesh, arrays, DATA_PARALLEL, "data_parallel", precision)
        if problems:
            break
    verdict(problems)


def check_weights_split(weights_split, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count, precision = device_count(), numerics.matmul_precision()
    mesh = two_d_mesh(rng, count)
    d, m = mesh["shape"]
    arrays = fresh_arrays(rng, int(rng.integers(2, 6)), d, int(rng.integers(2, 6)), m)
    verdict(layout_problems(weights_split, mesh, arrays, WEIGHTS_SPLIT, "weights_split", precision))


# --- test_grad_with_psum ------------------------------------------------------------------------
# A collective sum written in the program JAX hands to XLA (StableHLO), before the partitioner.
_WRITTEN_SUM = re.compile(r"\bstablehlo\.(all_reduce|reduce_scatter)\b")
NAMES = ("w", "x", "y")
GRADIENT_SPECS = {"w": (None, None), "x": ("data", None), "y": ("data", None)}


def verify_gradient_program(program, mesh: dict, arrays: dict, precision: str) -> list[str]:
    """How an exported gradient departs from the whole batch's gradient summed by hand, judged here."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    what = "the function grad_with_psum returned"
    k = len(mesh["order"])
    if program.nr_devices != k:
        return [f"{what} runs on {program.nr_devices} device(s), the mesh you are given has {k}: "
                "build the shard_map on that mesh"]
    if k > 1 and not _WRITTEN_SUM.search(program.mlir_module()):
        return [f"{what} sums nothing across devices in its own program (before XLA's passes): in the "
                "function jax.shard_map runs, sum the devices' parts with jax.lax.psum(..., 'data')"]
    here = mesh_here(mesh)
    try:
        placed = [jax.device_put(arrays[name], NamedSharding(here, P(*GRADIENT_SPECS[name]))) for name in NAMES]
        got = jax.jit(program.call).lower(*placed).compile()(*placed)
        got = got[0] if isinstance(got, (tuple, list)) else got
        blocks, value = device_blocks(got.sharding, got.shape), np.asarray(got)
    except Exception as exc:
        return [f"{what} did not compile and run here on arrays laid out as its in_specs say ({type(exc).__name__})"]
    want, _ = reference_gradient(arrays["w"], arrays["x"], arrays["y"])
    try:
        numerics.check_close(value, want, f"the gradient {what} computes (the whole batch's, counting every "
                             "device's rows once)", precision=precision)
    except (CheckFailed, TypeError, ValueError) as exc:
        return [str(exc)]
    if blocks != device_blocks(NamedSharding(here, P()), arrays["w"].shape):
        return [f"{what} should give the whole gradient on every device (out_specs=P())"]
    return []


def check_grad_with_psum(grad_with_psum, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count, precision = device_count(), numerics.matmul_precision()
    for mesh in one_d_meshes(rng, count):
        _gradient_on(grad_with_psum, mesh, rng, precision)


def _gradient_on(grad_with_psum, mesh: dict, rng: np.random.Generator, precision: str) -> None:
    arrays = fresh_arrays(rng, int(rng.integers(2, 6)), len(mesh["order"]), int(rng.integers(3, 9)), 1)
    held = remote.stand_in("sharding.mesh", mesh["order"], mesh["shape"], mesh["axes"])
    fn = call_student("grad_with_psum", grad_with_psum, held)
    shapes = {name: [int(d) for d in a.shape] for name, a in arrays.items()}
    report = remote.probe("sharding.export_gradient", fn, held, shapes)
    if not isinstance(report, dict) or "program" not in report:
        raised = report.get("raised") if isinstance(report, dict) else None
        raise CheckFailed("the function grad_with_psum returned could not be exported for the mesh it was given, "
                          "with w whole and the rows of x and y split over 'data'"
                          + (f" ({one_line(raised)})" if raised else "")
                          + ": return jax.shard_map(...) over that mesh")
    try:
        program = programs.program_from(report["program"], [(shapes[name], "float32") for name in NAMES],
                                        what="the function grad_with_psum returned")
    except CheckFailed:
        raise
    verdict(verify_gradient_program(program, mesh, arrays, precision))


# --- test_collectives ---------------------------------------------------------------------------
def _shape(rng) -> str:
    dims = ",".join(str(int(v)) for v in rng.integers(1, 300, int(rng.integers(0, 3))))
    return f"f32[{dims}]" + ("{1,0}" if "," in dims else "{0}" if dims else "")


def _other(rng, kind: str) -> str:
    return str(rng.choice([k for k in KINDS if k != kind]))


def _named(rng, kind: str, n: int, lie: bool = False) -> str:
    """An instruction name for a collective of `kind`: XLA's own spellings (%all-reduce.3,
    %all_gather.7) or names that say nothing (%fusion.4); with `lie`, another kind's name."""
    if lie:
        other = _other(rng, kind)
        return f"%{other}.{n}" if rng.random() < 0.5 else f"%{other.replace('-', '_')}.{n}"
    return str(rng.choice([f"%{kind}.{n}", f"%{kind.replace('-', '_')}.{n}", f"%fusion.{n}",
                           f"%multiply_reduce_fusion.{n}", f"%tmp.{n}"]))


def synthetic_hlo(rng: np.random.Generator) -> tuple[str, dict]:
    """HLO text with fresh counts of each collective kind, and those counts.

    Names lie both ways, as XLA's may: at least one collective is named after another kind, and
    at least one other operation is named after a collective; names and metadata never count."""
    counts = {kind: int(rng.integers(0, 4)) for kind in KINDS}
    counts[str(rng.choice(KINDS))] += 1
    lines, serial = [], iter(range(1000))
    total = sum(counts.values())
    liar = int(rng.integers(0, total))  # this collective bears another kind's name
    position = 0
    for kind, count in counts.items():
        for _ in range(count):
            lie, position = position == liar, position + 1
            s = _shape(rng)
            meta = f'metadata={{op_name="jit(step)/{kind}" source_file="lesson.py"}}'
            if rng.random() < 0.4:  # asynchronous: a start and a done, one collective
                n = next(serial)
                start = f"%{_other(rng, kind) if lie else kind}-start.{n}" if rng.random() < 0.7 else f"%start.{n}"
                lines.append(f"  {start} = ({s}, {s}) {kind}-start({s} %p{next(serial)}), channel_id=1, {meta}")
                lines.append(f"  {_named(rng, kind, next(serial), lie)} = {s} {kind}-done(({s}, {s}) {start}), {meta}")
            elif rng.random() < 0.5:
                lines.append(f"  {_named(rng, kind, next(serial), lie)} = {s} {kind}(%fusion.{next(serial)}), "
                             f"channel_id=2, replica_groups={{{{0,1}}}}, to_apply=%add, {meta}")
            else:
                lines.append(f"  {_named(rng, kind, next(serial), lie)} = ({s}, f32[]) {kind}(%dot.{next(serial)}, "
                             f"%x.{next(serial)}), replica_groups=[4,2]<=[8], {meta}")

    def other_operation(named_after_a_collective: bool) -> str:
        s = _shape(rng)
        kind = str(rng.choice(KINDS))
        n = next(serial)
        if named_after_a_collective:  # an add or a copy XLA named after a collective it came from
            name = f"%{kind}.{n}" if rng.random() < 0.5 else f"%{kind.replace('-', '_')}.{n}"
            return str(rng.choice([f"  {name} = {s} add({s} %a, {s} %b)",
                                   f"  {name} = {s} copy({s} %p.{next(serial)})",
                                   f"  {name} = {s} get-tuple-element(%tuple.{next(serial)}), index=0"]))
        return str(rng.choice([
            f"  %fusion.{n} = {s} fusion({s} %p.{next(serial)}), kind=kLoop, calls=%fused_{kind.replace('-', '_')}",
            f"  %get-tuple-element.{n} = {s} get-tuple-element(%{kind}.{next(serial)}), index=0",
            f"  %add.{n} = {s} add({s} %a, {s} %b), metadata={{op_name=\"jit(step)/{kind}(\"}}",
            f"  %dot.{n} = {s} dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}",
            f"  ROOT %tuple.{n} = ({s}, f32[]) tuple(%{kind}.{next(serial)}, %y)",
        ]))

    others = int(rng.integers(4, 10))
    lines += [other_operation(i == 0 or rng.random() < 0.3) for i in range(others)]
    body = list(lines)
    random.Random(int(rng.integers(2**31))).shuffle(body)
    body.sort(key=lambda line: "-done(" in line)  # every done after its start (a stable sort)
    text = "HloModule jit_step, entry_computation_layout={()->f32[]}\n\nENTRY %main.1 () -> f32[] {\n" \
           + "\n".join(body) + "\n}\n"
    return text, {kind: c for kind, c in counts.items() if c}


def collective_problems(found, expected: dict) -> list[str]:
    if not isinstance(found, dict):
        return [f"collectives should return a dict {{kind: count}}, got {type(found).__name__}"]
    try:
        got = {str(k): int(v) for k, v in found.items() if int(v)}
    except (TypeError, ValueError):
        return ["collectives should map each kind to an int count"]
    if got != expected:
        wrong = sorted(k for k in set(got) | set(expected) if got.get(k, 0) != expected.get(k, 0))
        return [f"the counts of {wrong} are not those of the program (count instructions by their operation, "
                "not by their names or metadata: XLA may name an instruction after anything; an asynchronous "
                "-start/-done pair is one collective)"]
    return []


def check_collectives(collectives, rng: np.random.Generator | None = None, programs: int = 3) -> None:
    rng = rng or np.random.default_rng()
    for _ in range(programs):
        text, expected = synthetic_hlo(rng)
        verdict(collective_problems(collectives(text), expected))


# --- test_compile_key ---------------------------------------------------------------------------
def placement_key(kind: dict) -> tuple:
    if kind["kind"] in ("uncommitted",):
        return ("uncommitted",)
    if kind["kind"] == "device":
        return ("device", kind["index"])
    if len(kind["order"]) == 1:  # on a mesh of one device, a split batch is a whole one
        return ("mesh", tuple(kind["order"]))
    return (kind["kind"], tuple(kind["order"]))


def placement_sequence(rng: np.random.Generator, count: int) -> list[dict]:
    """A call sequence of placements: some new to the function, some repeated."""
    a = [int(i) for i in rng.permutation(count)]
    b = list(a)
    if count > 1:
        while b == a:
            b = [int(i) for i in rng.permutation(count)]
    pool = [{"kind": "uncommitted"}, {"kind": "rows", "order": a}, {"kind": "replicated", "order": a},
            {"kind": "device", "index": int(rng.integers(0, count))}]
    if count > 1:
        pool.append({"kind": "rows", "order": b})
    calls = [pool[int(i)] for i in rng.integers(0, len(pool), 6)]
    # Three placements at least (one device has no more): the first, one run before the handover
    # (warm_placements) and one new to the function after the first call.
    for position in range(len(calls) - 1, 0, -1):
        if len({placement_key(kind) for kind in calls}) >= 3:
            break
        unused = [kind for kind in pool if placement_key(kind) not in {placement_key(k) for k in calls}]
        if unused:
            calls[position] = unused[int(rng.integers(0, len(unused)))]
    calls.insert(int(rng.integers(1, len(calls))), calls[0])  # a repeat, always
    return calls


def warm_placements(rng: np.random.Generator, calls: list[dict]) -> list[dict]:
    """One or two of the sequence's placements, run once before the function is handed over: their
    first call in the sequence compiles nothing, which no rule about the arguments can tell. Never
    the first call's, so the sequence starts with a compile (and running totals differ from counts),
    and never every other placement, so a later call compiles too."""
    first = placement_key(calls[0])
    distinct = [kind for key, kind in {placement_key(kind): kind for kind in calls}.items() if key != first]
    # At least one, and one left new to the function where there are two (so a count that ignores
    # placements fails too).
    size = max(1, min(int(rng.integers(1, 3)), len(distinct) - 1))
    chosen = rng.choice(len(distinct), size=size, replace=False)
    return [distinct[int(i)] for i in chosen]


def expected_compiles(calls: list[dict], warm: list[dict] = ()) -> list[int]:
    seen, counts = {placement_key(kind) for kind in warm}, []
    for kind in calls:
        key = placement_key(kind)
        counts.append(0 if key in seen else 1)
        seen.add(key)
    return counts


def check_compile_key(compiles_per_call, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count = device_count()
    calls = placement_sequence(rng, count)
    warm = warm_placements(rng, calls)
    shapes = {"batch": count * int(rng.integers(2, 5)), "inputs": int(rng.integers(3, 10)),
              "outputs": int(rng.integers(2, 8))}
    setup = remote.stand_in("sharding.compile_setup", calls, warm, shapes, int(rng.integers(2**31)), LEARNING_RATE)
    try:
        step, arguments = setup["step"], setup["calls"]
    except Exception:
        raise CheckFailed("the notebook's process did not set up the calls for compiles_per_call") from None
    registered = _listeners()
    found = remote.values_only(call_student("compiles_per_call", compiles_per_call, step, arguments))
    _no_listener_left(registered, "returned")
    try:  # a call that raises (a string is no argument of the step): nothing may stay registered
        compiles_per_call(step, [("not an array",)])
    except Exception:  # noqa: BLE001 (raising is the right outcome here)
        pass
    _no_listener_left(registered, "raised")
    try:
        if not isinstance(found, (list, tuple)):
            raise TypeError
        counts = [int(c) for c in found]
    except (TypeError, ValueError):
        raise CheckFailed("compiles_per_call should return a list of whole numbers, one per call") from None
    expected = expected_compiles(calls, warm)
    if len(counts) != len(expected):
        raise CheckFailed(f"compiles_per_call returned {len(counts)} counts for {len(expected)} calls: one per call")
    if counts != expected:
        first = next(i for i, (g, e) in enumerate(zip(counts, expected)) if g != e)
        raise CheckFailed(f"call {first + 1} of a sequence of placements: counted {counts[first]} compile(s), "
                          f"JAX compiled {expected[first]}: a placement the function has not seen compiles "
                          "once, a placement it has seen (in these calls or before them) does not; count "
                          "JAX's compile events during each call rather than predicting them")


def _listeners() -> int | None:
    """jax.monitoring's duration listeners registered in the notebook's process (None: unknown)."""
    count = remote.probe("tracing.listeners")
    return count if type(count) is int else None


def _no_listener_left(registered: int | None, how: str) -> None:
    now = _listeners() if registered is not None else None
    if now is not None and now != registered:
        raise CheckFailed(f"a jax.monitoring listener was still registered after compiles_per_call {how}: "
                          "unregister it with jax.monitoring.unregister_event_duration_listener in a `finally:` "
                          "block, so a failing call cannot leave it counting someone else's compiles")


# --- test_scaling_evidence -----------------------------------------------------------------------
FASTER, SLOWER, UNCLEAR = halves.FASTER, halves.SLOWER, halves.WITHIN
SCALING_HINTS = {
    "median_seconds": "the median of that device count's warm samples",
    "middle_half": ("the middle half is [25th, 75th] percentile of that count's warm samples, as np.percentile "
                    "computes them by default (linear interpolation)"),
    "speedup": "the speed-up is one device's median divided by this count's median",
    "efficiency": "the efficiency is the speed-up divided by the device count (1.0: the ideal, t(1) / k)",
    "verdict": (f"{FASTER!r} only when this count's 75th percentile is strictly below one device's 25th, {SLOWER!r} "
                f"only when its 25th is strictly above one device's 75th, {UNCLEAR!r} when the middle halves "
                "overlap or touch (one device compared with itself included)"),
}


def expected_scaling(warm_seconds: dict) -> dict:
    """What the lesson asks of scaling_evidence, computed here in float64."""
    one_median = float(np.median(np.asarray(warm_seconds[1], np.float64)))
    found = {}
    for count, samples in warm_seconds.items():
        median = float(np.median(np.asarray(samples, np.float64)))
        speedup = one_median / median
        found[count] = {"median_seconds": median, "middle_half": list(halves.middle_half(samples)),
                        "speedup": speedup, "efficiency": speedup / count,
                        "verdict": halves.compare(samples, warm_seconds[1])}
    return found


def _close_calls(warm_seconds: dict) -> bool:
    """Whether a verdict of these timings hangs on a comparison within a millionth."""
    return any(count != 1 and halves.margin(samples, warm_seconds[1]) < 1e-6 for count, samples in warm_seconds.items())


def _timings(rng: np.random.Generator, centre: float, width: float) -> list[float]:
    """Warm samples around `centre` (log-normal, relative width `width`); now and then one busy moment."""
    samples = centre * np.exp(width * rng.standard_normal(int(rng.integers(5, 17))))
    if rng.random() < 0.3:
        samples[rng.integers(len(samples))] *= rng.uniform(3, 10)
    return [float(s) for s in samples]


# What each drawn device count is meant to show: the verdict it must get, for the overlapping ones
# on which side of one device's median its own median must lie, and whether that median lies past
# one device's quartile on that side (its middle half still overlapping one device's: a median
# compared with one device's quartiles reads it as a difference, the rule does not).
SCALING_INTENTS = {"faster": (FASTER, None, False), "slower": (SLOWER, None, False),
                   "overlap below": (UNCLEAR, "below", False), "overlap above": (UNCLEAR, "above", False),
                   "median past the quartile below": (UNCLEAR, "below", True),
                   "median past the quartile above": (UNCLEAR, "above", True)}


def scaling_dataset(rng: np.random.Generator, intents: list[str]) -> dict:
    """{device count: warm seconds} for one device and one more count per intent, drawn until every
    count shows what its intent asks and no verdict hangs on a near tie."""
    for _ in range(1000):  # a bound: a case made impossible by a changed constant fails, never hangs
        counts = [int(c) for c in rng.choice([2, 3, 4, 6, 8, 16], size=len(intents), replace=False)]
        centre = float(10 ** rng.uniform(-4, -1))
        warm = {1: _timings(rng, centre, rng.uniform(0.08, 0.25))}
        for count, intent in zip(counts, intents):
            factor = {"faster": rng.uniform(0.25, 0.75), "slower": rng.uniform(1.4, 3.0),
                      "overlap below": 1 - rng.uniform(0.02, 0.06), "overlap above": 1 + rng.uniform(0.02, 0.06),
                      "median past the quartile below": rng.uniform(0.7, 0.9),
                      "median past the quartile above": rng.uniform(1.1, 1.4)}[intent]
            width = (rng.uniform(0.3, 0.5) if "past" in intent else rng.uniform(0.15, 0.3) if "overlap" in intent
                     else 0.05)
            warm[count] = _timings(rng, centre * factor, width)
        found = expected_scaling(warm)
        one_median, (one_low, one_high) = found[1]["median_seconds"], found[1]["middle_half"]
        shown = True
        for count, intent in zip(counts, intents):
            want, side, past = SCALING_INTENTS[intent]
            median = found[count]["median_seconds"]
            beyond = median < one_low if side == "below" else median > one_high
            shown = (shown and found[count]["verdict"] == want
                     and (side is None or (median < one_median) == (side == "below"))
                     and (not past or beyond))
        if shown and not _close_calls(warm):
            return dict(sorted(warm.items()))
    raise RuntimeError(f"no scaling dataset drawn that shows {intents}")


def scaling_cases(rng: np.random.Generator) -> list[dict]:
    """Three datasets that between them show every verdict, medians on both sides of one device's
    median where the middle halves overlap, and medians past one device's quartiles on both sides
    whose middle halves still overlap one device's; and a fourth, one device and one more count whose
    middle halves touch exactly (within the spread: the rule's comparisons are strict)."""
    intents = list(SCALING_INTENTS)[:4]
    extra = [intents[int(i)] for i in rng.integers(0, len(intents), size=2)]
    plans = [["faster", "overlap below", "median past the quartile below"],
             ["slower", "overlap above", "median past the quartile above", extra[0]],
             [extra[1], "overlap below", "faster"]]
    one, other = halves.touching(rng)
    touching = {1: one, int(rng.choice([2, 4, 8])): other}
    return [scaling_dataset(rng, [plan[int(i)] for i in rng.permutation(len(plan))]) for plan in plans] + [touching]


def scaling_problems(got, warm_seconds: dict, what: str) -> list[str]:
    try:
        got = remote.values_only(got)
    except CheckFailed as exc:
        return [str(exc)]
    if not isinstance(got, dict):
        return [f"scaling_evidence should return a dict {{device count: {{...}}}}, got {type(got).__name__} ({what})"]
    problems = []
    for count, want in expected_scaling(warm_seconds).items():
        entry = got.get(count)
        where = f"{count} device(s), {what}"
        if not isinstance(entry, dict):
            problems.append(f"the result has no dict for {count} device(s) ({what}): one entry per device count given")
            continue
        problems += key_problems(entry, want, SCALING_HINTS, where)
    return problems


def check_scaling_evidence(scaling_evidence, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for index, warm in enumerate(scaling_cases(rng)):
        what = f"timings {index + 1} of 4"
        got = call_student(f"scaling_evidence on {what}", scaling_evidence,
                           {count: list(samples) for count, samples in warm.items()})
        verdict(scaling_problems(got, warm, what))
