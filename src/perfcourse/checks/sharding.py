"""Grade performance-08 (Eight devices): placements on meshes picked at grading time, never a speed-up.

Students write `data_parallel(mesh)` and `weights_split(mesh)`, each returning the
`NamedSharding`s of the lesson's step `sgd_step(w, x, y)` (one SGD step of
mean((tanh(x @ w) - y)**2)); `collectives(hlo_text)`, which counts the collective operations of a
compiled program by kind; `compiles_per_call(fn, calls)`, which counts the compiles each call of a
jitted function causes; and `time_step(fn, *args, repeats)`, a synchronized timer.

Shardings, meshes and sharded arrays exist only in the student's process: course probes
(`perfcourse.kernel.probes.sharding`) build a mesh there from devices, an order and a shape picked
here, apply the student's function to it, place arrays drawn here, run a fresh jit of the lesson's
step on them and send back plain data: which device holds which block of each array, the step's
results, the compiled program's text. The judging is here:

- test_data_parallel (`check_data_parallel`): on a mesh of all the process's devices or (half the
  time) fewer of them, always in a shuffled order, the batch (x and y) must be
  split into equal blocks of rows, block i on the mesh's i-th device, all columns; w whole on every
  device of the mesh; the step's new weights and loss equal to a float64 NumPy computation of the
  same step on the same fresh values (tolerance of the matrix-product precision measured here,
  `checks.numerics`), the new weights whole on every device, and the compiled program, read here,
  must sum gradients across devices (an all-reduce or a reduce-scatter) where the mesh has several.
- test_weights_split (`check_weights_split`): the same on a 2-D mesh ("data", "model") of a shape
  and device order picked here: x split by rows over "data"; w by columns over "model"; y by rows
  and columns; the new weights keep w's column split.
- test_collectives (`check_collectives`): values only. HLO text written here, with fresh counts of
  each kind, asynchronous start/done pairs (one collective each), instruction names and metadata
  that mention a kind without being one, and other operations: the counts must be exact.
- test_compile_key (`check_compile_key`): a fresh jitted step and a call sequence of placements
  picked here (uncommitted, committed to one device, batch split or replicated over meshes in
  different device orders), fresh values on every call: each call must count 1 compile where its
  placement is new to the function and 0 where it is not.
- test_timer (`check_timer`): `checks.timing`'s synchronization check (calibrated work handed to
  the timer, calls counted here).

What a forger would have to return: for meshes, shapes and values drawn here, the block each
device of a shuffled mesh holds (so the placement itself), the step's float64-accurate results,
and a compiled program text containing the collective the layout requires; exact collective counts
of text it has not seen; compile counts of sequences it is not told in advance; and, for the timer,
what `checks.timing` says. The device count is the student's process's own report; with one
device every placement is whole and no collective is required. So when grading (the trusted
kernel, on the CPU kernel grader_config.py names) the count must be GRADED_DEVICES, the count the
lesson's first cell asks XLA's CPU backend for: a forged probe claiming one device fails, and so
does a notebook whose first cell did not run first. Where the checks share the notebook's process
(artifacts on a one-GPU machine, the tests) they run on the devices there are.

Limit (README, "Known limits"): a probe replaced in the student's own kernel is handed the inputs
picked here and can answer the layout and compile-key cells with data computed from them, without
running the student's code; the grader flags code that names the grading package.
"""
from __future__ import annotations

import random
import re

import numpy as np

from . import CheckFailed, numerics, remote, timing, verdict

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
def reference_step(w, x, y, learning_rate: float = LEARNING_RATE):
    """New weights and loss of one SGD step of mean((tanh(x @ w) - y)**2), in float64 NumPy."""
    w, x, y = (np.asarray(a, dtype=np.float64) for a in (w, x, y))
    t = np.tanh(x @ w)
    r = t - y
    loss = float(np.mean(r ** 2))
    dz = (2.0 / r.size) * r * (1.0 - t ** 2)
    return w - learning_rate * (x.T @ dz), loss


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
    """One mesh: all devices, or (half the time, where there are several) fewer of them, in a
    shuffled order either way, so a sharding that ignores the mesh it is given shows."""
    sizes = [d for d in _divisors(count) if 1 < d < count]
    k = int(rng.choice(sizes)) if sizes and rng.random() < 0.5 else count
    order = [int(i) for i in rng.choice(count, size=k, replace=False)]
    if k == count and count > 1:
        while order == list(range(count)):
            order = [int(i) for i in rng.permutation(count)]
    return [{"order": order, "shape": [k], "axes": ["data"]}]


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


def placement_problems(report, mesh: dict, arrays: dict, layout: dict, what: str, precision: str) -> list[str]:
    """How the probe's report of a placement and one step on `mesh` departs from `layout`."""
    if not isinstance(report, dict):
        return [f"{what}: the placement could not be read"]
    if "raised" in report:
        return [f"{what} raised {report['raised']}"]
    shapes = {name: a.shape for name, a in arrays.items()}
    expected = expected_layout(mesh, shapes, layout)
    placed = report.get("placed") or {}
    problems = []
    for name in ("w", "x", "y"):
        got = _plain_shards(placed.get(name) or [])
        if got != expected[name]:
            problems.append(f"{what}: {name} should be {DESCRIPTIONS[tuple(layout[name])]}, each block on the "
                            "mesh's own device for that position (use the mesh you are given)")
    if problems:
        return problems
    if "step_raised" in report:
        return [f"the lesson's step failed on arrays placed by {what}: {report['step_raised']}"]
    want_w, want_loss = reference_step(arrays["w"], arrays["x"], arrays["y"])
    try:
        numerics.check_close(report.get("new_w"), want_w, f"the step's new weights with {what}'s placement",
                             precision=precision)
        numerics.check_close(np.asarray([report.get("loss")], dtype=np.float64), np.asarray([want_loss]),
                             f"the step's loss with {what}'s placement", precision=precision)
    except (CheckFailed, TypeError, ValueError) as exc:
        return [str(exc)]
    new_w = _plain_shards(report.get("new_w_shards") or [])
    if new_w != expected_layout(mesh, {"w": shapes["w"]}, {"w": layout["w"]})["w"]:
        problems.append(f"{what}: the new weights should keep w's layout ({DESCRIPTIONS[tuple(layout['w'])]})")
    if len(mesh["order"]) > 1:
        found = count_collectives(report.get("compiled_text") or "")
        if not any(found.get(kind) for kind in SUMMING):
            problems.append(f"{what}: the compiled step sums no gradient across devices (no all-reduce or "
                            "reduce-scatter): the batch is not split the way the step needs")
    return problems


DATA_PARALLEL = {"w": (None, None), "x": ("data", None), "y": ("data", None)}
WEIGHTS_SPLIT = {"w": (None, "model"), "x": ("data", None), "y": ("data", "model")}


def check_data_parallel(data_parallel, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count, precision = device_count(), numerics.matmul_precision()
    problems = []
    for mesh in one_d_meshes(rng, count):
        k = len(mesh["order"])
        arrays = fresh_arrays(rng, int(rng.integers(2, 6)), k, int(rng.integers(3, 9)), 1)
        report = remote.probe("sharding.place_and_step", data_parallel, mesh, arrays, LEARNING_RATE)
        problems += placement_problems(report, mesh, arrays, DATA_PARALLEL, "data_parallel", precision)
        if problems:
            break
    verdict(problems)


def check_weights_split(weights_split, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count, precision = device_count(), numerics.matmul_precision()
    mesh = two_d_mesh(rng, count)
    d, m = mesh["shape"]
    arrays = fresh_arrays(rng, int(rng.integers(2, 6)), d, int(rng.integers(2, 6)), m)
    report = remote.probe("sharding.place_and_step", weights_split, mesh, arrays, LEARNING_RATE)
    verdict(placement_problems(report, mesh, arrays, WEIGHTS_SPLIT, "weights_split", precision))


# --- test_collectives ---------------------------------------------------------------------------
def _shape(rng) -> str:
    dims = ",".join(str(int(v)) for v in rng.integers(1, 300, int(rng.integers(0, 3))))
    return f"f32[{dims}]" + ("{1,0}" if "," in dims else "{0}" if dims else "")


def synthetic_hlo(rng: np.random.Generator) -> tuple[str, dict]:
    """HLO text with fresh counts of each collective kind, and those counts."""
    counts = {kind: int(rng.integers(0, 4)) for kind in KINDS}
    counts[str(rng.choice(KINDS))] += 1
    lines, serial = [], iter(range(1000))

    def name(kind):
        return f"%{kind}.{next(serial)}"

    for kind, count in counts.items():
        for _ in range(count):
            s = _shape(rng)
            meta = f'metadata={{op_name="jit(step)/{kind}" source_file="lesson.py"}}'
            if rng.random() < 0.4:  # asynchronous: a start and a done, one collective
                start = name(f"{kind}-start")
                lines.append(f"  {start} = ({s}, {s}) {kind}-start({s} %p{next(serial)}), channel_id=1, {meta}")
                lines.append(f"  {name(kind + '-done')} = {s} {kind}-done(({s}, {s}) {start}), {meta}")
            elif rng.random() < 0.5:
                lines.append(f"  {name(kind)} = {s} {kind}(%fusion.{next(serial)}), channel_id=2, "
                             f"replica_groups={{{{0,1}}}}, to_apply=%add, {meta}")
            else:
                lines.append(f"  {name(kind)} = ({s}, f32[]) {kind}(%dot.{next(serial)}, %x.{next(serial)}), "
                             f"replica_groups=[4,2]<=[8], {meta}")
    for _ in range(int(rng.integers(4, 10))):  # other operations, some named after a collective
        s = _shape(rng)
        kind = str(rng.choice(KINDS))
        lines.append(str(rng.choice([
            f"  %fusion.{next(serial)} = {s} fusion({s} %p.{next(serial)}), kind=kLoop, calls=%fused_{kind.replace('-', '_')}",
            f"  %get-tuple-element.{next(serial)} = {s} get-tuple-element(%{kind}.{next(serial)}), index=0",
            f"  %add.{next(serial)} = {s} add({s} %a, {s} %b), metadata={{op_name=\"jit(step)/{kind}(\"}}",
            f"  %dot.{next(serial)} = {s} dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}",
            f"  ROOT %tuple.{next(serial)} = ({s}, f32[]) tuple(%{kind}.{next(serial)}, %y)",
        ])))
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
        return [f"the counts of {wrong} are not those of the program (count instructions, not names or metadata; "
                "an asynchronous -start/-done pair is one collective)"]
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
    calls.insert(int(rng.integers(1, len(calls))), calls[0])  # a repeat, always
    return calls


def expected_compiles(calls: list[dict]) -> list[int]:
    seen, counts = set(), []
    for kind in calls:
        key = placement_key(kind)
        counts.append(0 if key in seen else 1)
        seen.add(key)
    return counts


def check_compile_key(compiles_per_call, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count = device_count()
    calls = placement_sequence(rng, count)
    shapes = {"batch": count * int(rng.integers(2, 5)), "inputs": int(rng.integers(3, 10)),
              "outputs": int(rng.integers(2, 8))}
    found = remote.probe("sharding.compile_counts", compiles_per_call, calls, shapes,
                         int(rng.integers(2**31)), LEARNING_RATE)
    if not isinstance(found, dict) or ("counts" not in found and "raised" not in found):
        raise CheckFailed("compiles_per_call gave no answer")
    if "raised" in found:
        raise CheckFailed(f"compiles_per_call raised {found['raised']}")
    expected = expected_compiles(calls)
    counts = found["counts"]
    if len(counts) != len(expected):
        raise CheckFailed(f"compiles_per_call returned {len(counts)} counts for {len(expected)} calls: one per call")
    if counts != expected:
        first = next(i for i, (g, e) in enumerate(zip(counts, expected)) if g != e)
        raise CheckFailed(f"call {first + 1} of a sequence of placements: counted {counts[first]} compile(s), "
                          f"JAX compiled {expected[first]}: a placement the function has not seen compiles "
                          "once, a placement it has seen does not (count JAX's compile events per call)")


# --- test_timer ---------------------------------------------------------------------------------
def check_timer(time_step, repeats: int = 5) -> None:
    timing.check_synchronized(time_step, warm_calls=repeats, keyword="repeats")
