"""Grade performance-11 (sharded training at scale: FSDP with shard_map): programs and arithmetic, never a speed.

Students write `fsdp_step(mesh)`, a `jax.shard_map` over the mesh's "fsdp" axis whose function
receives one device's rows of every layer's weights and of the batch, all-gathers each layer's
weights before using them, and returns the loss of the whole batch (the same on every device) and
each device's block of every gradient, summed across devices by a reduce-scatter
(`jax.lax.psum_scatter`); `collective_overlap(hlo_text)`, each collective kind's count in a compiled
program and how many of its asynchronous start/done pairs have computation scheduled between them;
and `memory_per_device(layer_shapes, devices, itemsize)`, the bytes of weights each device holds
with replicated data parallelism and with FSDP, and the largest layer a device gathers whole.

What this kernel believes, it observed or verified itself:

- test_fsdp_step (`check_fsdp_step`). A mesh of all the process's devices or (half the time) fewer
  of them, in a shuffled order, with one axis "fsdp", is built in the student's process
  (performance-08's probe `sharding.mesh`) and stays there; *this kernel calls* `fsdp_step` on it,
  and the function it returns goes, unread, to the probe `fsdp.export_step`, which exports it for a
  network whose depth and widths are drawn here (two to four layers), with every weight and the batch
  split by rows. *Verified* here (`checks.programs.program_from`): the program spans the mesh's
  devices; its StableHLO (the program before XLA's passes, what the function itself wrote) gathers
  weights (`all_gather`) and reduce-scatters gradients (`reduce_scatter`) at least once per layer
  where the mesh has several devices; compiled here on CPU devices of this kernel's own
  (`sharding.own_devices`) and run on fresh values that never leave this kernel, it gives the
  float64 NumPy loss and every layer's gradient (tolerance of the matrix-product precision measured
  here), each gradient split by rows, block i on the mesh's i-th device, the loss whole on all.
  A gradient summed by an all-reduce and then sliced computes the same values and fails: the
  lesson asks for the reduce-scatter, which moves and keeps 1/n of it.
- test_overlap (`check_collective_overlap`): *observed*, values only. HLO text written here: an
  entry computation after a fused computation, with synchronous collectives, asynchronous
  start/done pairs (interleaved, some with fusions, dots or convolutions scheduled between start and
  done, some with only bookkeeping between: get-tuple-element, bitcast, copy-start/copy-done,
  parameters, another collective), instruction names that lie (a start named after another kind, a
  fusion named after a collective's start or done, as a TPU names its fused asynchronous
  collectives), metadata that mention collectives. Every count must be exact.
- test_memory (`check_memory_per_device`): *observed*, values only: layer shapes, device counts and
  item sizes drawn here; the three byte counts exactly.

What a forger would have to do: the student's functions are called by this kernel; a replaced probe
would have to send a program that, compiled and run here, gathers and reduce-scatters in its own text
and computes the loss and gradients of values it never sees: an FSDP step, wherever it is written.
"""
from __future__ import annotations

import re

import numpy as np

from . import CheckFailed, numerics, programs, remote, sharding, verdict

AXIS = "fsdp"
KINDS = sharding.KINDS
COMPUTE_OPS = ("fusion", "dot", "convolution")  # the lesson's COMPUTE_OPS: operations that do arithmetic


# --- what the step computes, in float64 ---------------------------------------------------------
def reference_step(weights, x, y):
    """Loss mean((h_L - y)**2), h_{l+1} = tanh(h_l @ w_l), and its gradient in every w_l, in float64."""
    ws = [np.asarray(w, np.float64) for w in weights]
    hs = [np.asarray(x, np.float64)]
    for w in ws:
        hs.append(np.tanh(hs[-1] @ w))
    y = np.asarray(y, np.float64)
    dh = 2.0 * (hs[-1] - y) / y.size
    grads = [None] * len(ws)
    for layer in reversed(range(len(ws))):
        dz = dh * (1.0 - hs[layer + 1] ** 2)
        grads[layer] = hs[layer].T @ dz
        dh = dz @ ws[layer].T
    return float(np.mean((hs[-1] - y) ** 2)), grads


def draw_network(rng: np.random.Generator, k: int) -> dict:
    """Float32 weights of 2 to 4 layers and a batch, every row count a multiple of k."""
    layers = int(rng.integers(2, 5))
    widths = [k * int(rng.integers(1, 5)) for _ in range(layers)] + [int(rng.integers(2, 9))]
    weights = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in zip(widths, widths[1:])]
    batch = k * int(rng.integers(2, 5))
    x = rng.standard_normal((batch, widths[0])).astype(np.float32)
    y = rng.uniform(-0.9, 0.9, (batch, widths[-1])).astype(np.float32)
    return {"weights": weights, "x": x, "y": y}


# --- test_fsdp_step -----------------------------------------------------------------------------
def _written(text: str, op: str) -> int:
    return len(re.findall(r"\bstablehlo\." + op + r"\b", text))


def verify_step_program(program, mesh: dict, net: dict, precision: str) -> list[str]:
    """How an exported FSDP step departs from the lesson's, judged here."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    what = "the function fsdp_step returned"
    k, layers = len(mesh["order"]), len(net["weights"])
    if program.nr_devices != k:
        return [f"{what} runs on {program.nr_devices} device(s), the mesh you are given has {k}: "
                "build the shard_map on that mesh"]
    if k > 1:
        text = program.mlir_module()
        if _written(text, "all_gather") < layers:
            return [f"{what} does not gather every layer's weights in its own program (before XLA's passes): "
                    f"in the function jax.shard_map runs, jax.lax.all_gather(block, '{AXIS}', tiled=True) each "
                    "layer's block before it is used"]
        if _written(text, "reduce_scatter") < layers:
            return [f"{what} does not reduce-scatter every layer's gradient in its own program: each device "
                    f"should receive only its block of the summed gradient (jax.lax.psum_scatter over '{AXIS}', "
                    "scatter_dimension=0, tiled=True), not the whole sum (an all-reduce) sliced afterwards"]
    here = sharding._mesh_here(mesh)
    rows, whole = NamedSharding(here, P(AXIS, None)), NamedSharding(here, P())
    # The layout its arguments take is read from the program itself, not from the export's word: run
    # on row-split arrays, a program that takes them whole would be handed them re-laid out, silently.
    arguments = list(net["weights"]) + [net["x"], net["y"]]
    given = [sharding._on_devices(hlo, here) for hlo in program.in_shardings_hlo]
    if len(given) != len(arguments) or any(
            taken is None or sharding._blocks(taken, a.shape) != sharding._blocks(rows, a.shape)
            for taken, a in zip(given, arguments)):
        return [f"{what} should take every layer's weights and the batch split by rows over '{AXIS}' "
                f"(in_specs P('{AXIS}', None)), block i on the mesh's i-th device"]
    try:
        weights = [jax.device_put(w, rows) for w in net["weights"]]
        x, y = jax.device_put(net["x"], rows), jax.device_put(net["y"], rows)
        loss, grads = jax.jit(program.call)(weights, x, y)
        grads = list(grads)
        got_loss = np.asarray(loss)
        got = [np.asarray(g) for g in grads]
        blocks = [sharding._blocks(g.sharding, g.shape) for g in grads]
        loss_blocks = sharding._blocks(loss.sharding, loss.shape)
    except Exception as exc:
        return [f"{what} did not compile and run here on weights and a batch split by rows over '{AXIS}', "
                f"returning (loss, [one gradient per layer]) ({type(exc).__name__})"]
    if len(got) != layers:
        return [f"{what} gives {len(got)} gradient(s) for {layers} layers: one per layer, in order"]
    want_loss, want = reference_step(net["weights"], net["x"], net["y"])
    try:
        numerics.check_close(got_loss.reshape(-1)[:1] if got_loss.size == 1 else got_loss, np.asarray([want_loss]),
                             f"the loss {what} computes (the mean over the whole batch)", precision=precision)
        for layer, (g, w) in enumerate(zip(got, want)):
            numerics.check_close(g, w, f"layer {layer}'s gradient {what} computes (the whole batch's, each "
                                 "device's part counted once)", precision=precision)
    except (CheckFailed, TypeError, ValueError) as exc:
        return [str(exc)]
    if loss_blocks != sharding._blocks(whole, loss.shape):
        return [f"{what} should give the loss whole on every device (out_specs P())"]
    for layer, (found, w) in enumerate(zip(blocks, net["weights"])):
        if found != sharding._blocks(rows, w.shape):
            return [f"{what} should give layer {layer}'s gradient split by rows over '{AXIS}' like its weights, "
                    "block i on the mesh's i-th device"]
    return []


def check_fsdp_step(fsdp_step, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count, precision = sharding.device_count(), numerics.matmul_precision()
    (mesh,) = sharding.one_d_meshes(rng, count)
    mesh["axes"] = [AXIS]
    net = draw_network(rng, len(mesh["order"]))
    held = sharding._held("sharding.mesh", mesh["order"], mesh["shape"], mesh["axes"])
    try:
        fn = fsdp_step(held)
    except CheckFailed:
        raise
    except Exception as exc:
        raise CheckFailed(f"fsdp_step raised {type(exc).__name__}: {exc}"[:500]) from None
    shapes = {"params": [list(w.shape) for w in net["weights"]], "x": list(net["x"].shape), "y": list(net["y"].shape)}
    report = remote.probe("fsdp.export_step", fn, held, shapes)
    if not isinstance(report, dict) or "program" not in report:
        raised = report.get("raised") if isinstance(report, dict) else None
        raise CheckFailed("the function fsdp_step returned could not be exported for the mesh it was given, with "
                          f"every layer's weights and the batch split by rows over '{AXIS}'"
                          + (f" ({str(raised)[:300]})" if raised else "")
                          + ": return jax.shard_map(...) over that mesh, taking (weights, x, y)")
    specs = [(s, "float32") for s in shapes["params"]] + [(shapes["x"], "float32"), (shapes["y"], "float32")]
    program = programs.program_from(report["program"], specs, what="the function fsdp_step returned")
    verdict(verify_step_program(program, mesh, net, precision))


# --- test_overlap -------------------------------------------------------------------------------
def _shape(rng) -> str:
    return f"f32[{int(rng.integers(2, 300))},{int(rng.integers(2, 300))}]{{1,0}}"


def synthetic_schedule(rng: np.random.Generator) -> tuple[str, dict]:
    """A scheduled entry computation with synchronous collectives and asynchronous pairs, and the
    expected {kind: {"count", "overlapped"}}."""
    serial = iter(range(1, 10_000))
    pending = []        # (start name, kind, computed since start?)
    lines, expected = [], {}
    liar_names = list(KINDS)

    def name_for(kind: str, suffix: str) -> str:
        roll = rng.random()
        if roll < 0.4:
            return f"%{kind}{suffix}.{next(serial)}"
        if roll < 0.7:
            other = str(rng.choice([k for k in liar_names if k != kind]))
            return f"%{other}{suffix}.{next(serial)}"
        return f"%{rng.choice(['tmp', 'x', 'collective'])}.{next(serial)}"

    def bookkeeping() -> str:
        op = str(rng.choice(["get-tuple-element", "bitcast", "copy-start", "copy-done", "parameter", "constant"]))
        name = str(rng.choice([f"%{op}.{next(serial)}", f"%all-gather-done.{next(serial)}",
                               f"%fusion.{next(serial)}"]))
        return f"  {name} = {_shape(rng)} {op}(%p.{next(serial)})"

    def compute() -> str:
        op = str(rng.choice(COMPUTE_OPS))
        name = str(rng.choice([f"%{op}.{next(serial)}", f"%async-collective-start.{next(serial)}",
                               f"%all-reduce-start.{next(serial)}", f"%reduce_scatter_fusion.{next(serial)}"]))
        tail = ", kind=kLoop, calls=%fused_computation" if op == "fusion" else ""
        return (f"  {name} = {_shape(rng)} {op}(%p.{next(serial)}){tail}, "
                f'metadata={{op_name="jit(step)/{rng.choice(KINDS)}"}}')

    steps = int(rng.integers(14, 26))
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.25 or (roll < 0.35 and len(pending) > 2):
            if pending:  # finish one pending pair (not always the latest)
                start, kind, computed = pending.pop(int(rng.integers(0, len(pending))))
                lines.append(f"  {name_for(kind, '-done')} = {_shape(rng)} {kind}-done({start})")
                entry = expected.setdefault(kind, {"count": 0, "overlapped": 0})
                entry["overlapped"] += int(computed)
                continue
        if roll < 0.45:
            kind = str(rng.choice(KINDS))
            start = name_for(kind, "-start")
            lines.append(f"  {start} = ({_shape(rng)}, {_shape(rng)}) {kind}-start(%p.{next(serial)}), "
                         f"channel_id={next(serial)}, replica_groups={{{{0,1,2,3}}}}")
            pending.append((start, kind, False))
            expected.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
        elif roll < 0.6:
            kind = str(rng.choice(KINDS))
            lines.append(f"  {name_for(kind, '')} = {_shape(rng)} {kind}(%p.{next(serial)}), "
                         f"channel_id={next(serial)}, replica_groups={{{{0,1}},{{2,3}}}}")
            expected.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
        elif roll < 0.8:
            lines.append(compute())
            pending = [(s, k, True) for s, k, _ in pending]
        else:
            lines.append(bookkeeping())
    while pending:
        start, kind, computed = pending.pop(int(rng.integers(0, len(pending))))
        if rng.random() < 0.5:
            lines.append(compute())
            pending = [(s, k, True) for s, k, _ in pending]
            computed = True
        lines.append(f"  {name_for(kind, '-done')} = {_shape(rng)} {kind}-done({start})")
        expected[kind]["overlapped"] += int(computed)
    fused = ("%fused_computation (p.1: f32[8,8]) -> f32[8,8] {\n  %p.1 = f32[8,8]{1,0} parameter(0)\n"
             "  %dot.0 = f32[8,8]{1,0} dot(%p.1, %p.1)\n  ROOT %tanh.0 = f32[8,8]{1,0} tanh(%dot.0)\n}\n\n")
    text = ("HloModule jit_step, is_scheduled=true\n\n" + fused + "ENTRY %main.1 () -> f32[] {\n"
            + "\n".join(lines) + "\n  ROOT %tuple.9 = () tuple()\n}\n")
    return text, {kind: dict(entry) for kind, entry in expected.items() if entry["count"]}


def schedules(rng: np.random.Generator, count: int = 4) -> list[tuple[str, dict]]:
    """`count` schedules among which an overlapped pair, a pair with only bookkeeping between, and a
    synchronous collective all occur."""
    while True:
        drawn = [synthetic_schedule(rng) for _ in range(count)]
        entries = [entry for _, expected in drawn for entry in expected.values()]
        overlapped = sum(e["overlapped"] for e in entries)
        if overlapped and any("-done(" in text for text, _ in drawn) and sum(e["count"] for e in entries) > overlapped:
            return drawn


def overlap_problems(found, expected: dict) -> list[str]:
    found = remote.values_only(found)
    if not isinstance(found, dict):
        return [f"collective_overlap should return a dict {{kind: {{'count': ..., 'overlapped': ...}}}}, "
                f"got {type(found).__name__}"]
    try:
        got = {str(kind): {"count": int(entry["count"]), "overlapped": int(entry["overlapped"])}
               for kind, entry in found.items() if int(entry["count"])}
    except (TypeError, ValueError, KeyError):
        return ["collective_overlap should map each kind to {'count': int, 'overlapped': int}"]
    counts = {k: e["count"] for k, e in got.items()}
    if counts != {k: e["count"] for k, e in expected.items()}:
        return ["the collectives' counts are not those of the program (count instructions by their operation, "
                "not by their names or metadata; an asynchronous -start/-done pair is one collective)"]
    if got != expected:
        return ["the overlapped counts are not those of the program: a pair is overlapped when an instruction "
                "whose operation is in COMPUTE_OPS lies between its -start and the -done that names it as "
                "operand (bookkeeping such as get-tuple-element, copies or other collectives does not count)"]
    return []


def check_collective_overlap(collective_overlap, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for text, expected in schedules(rng):
        try:
            found = collective_overlap(text)
        except CheckFailed:
            raise
        except Exception as exc:
            raise CheckFailed(f"collective_overlap raised {type(exc).__name__}: {exc}"[:300]) from None
        verdict(overlap_problems(found, expected))


# --- test_memory --------------------------------------------------------------------------------
def expected_memory(layer_shapes, devices: int, itemsize: int) -> dict:
    sizes = [int(r) * int(c) for r, c in layer_shapes]
    return {"replicated": sum(sizes) * itemsize, "fsdp": sum(s // devices for s in sizes) * itemsize,
            "gathered": max(sizes) * itemsize}


MEMORY_HINTS = {
    "replicated": "with replicated data parallelism every device holds every layer's weights whole",
    "fsdp": "with FSDP each device holds 1/devices of the rows of every layer",
    "gathered": "the largest single layer, whole: what one layer's all-gather puts on a device while it is used",
}


def check_memory_per_device(memory_per_device, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for _ in range(4):
        devices = int(rng.choice([2, 4, 8, 16, 64]))
        layers = int(rng.integers(2, 6))
        shapes = [(devices * int(rng.integers(1, 200)), int(rng.integers(1, 5000))) for _ in range(layers)]
        itemsize = int(rng.choice([2, 4]))
        try:
            found = remote.values_only(memory_per_device([tuple(s) for s in shapes], devices, itemsize))
        except CheckFailed:
            raise
        except Exception as exc:
            raise CheckFailed(f"memory_per_device raised {type(exc).__name__}: {exc}"[:300]) from None
        want = expected_memory(shapes, devices, itemsize)
        if not isinstance(found, dict):
            raise CheckFailed(f"memory_per_device should return a dict with {sorted(want)}")
        problems = []
        for key, value in want.items():
            try:
                right = int(found[key]) == value and float(found[key]) == value
            except (KeyError, TypeError, ValueError):
                right = False
            if not right:
                problems.append(f"{key} is not right ({layers} layers, {devices} devices, {itemsize}-byte items): "
                                f"{MEMORY_HINTS[key]}")
        verdict(problems)
