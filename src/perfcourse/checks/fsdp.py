"""Grade performance-11 (FSDP as practised): programs and arithmetic, never a speed.

Students write `fsdp_step(mesh)`, a `jax.shard_map` over the mesh's "fsdp" axis whose function
receives one device's rows of every layer of a stacked weight array (layers, width, width) and of
the batch, scans over the layers (`jax.lax.scan`) with the layer body rematerialized
(`jax.checkpoint`), all-gathers one layer's weights inside the scanned body, and returns the loss
of the whole batch (the same on every device) and each device's block of the gradient (the
reduce-scatter autodiff writes as the transpose of the gather, or `jax.lax.psum_scatter` by hand);
`collective_overlap(hlo_text)`, each collective kind's count in the computations a compiled program
runs as its schedule (ENTRY and, from there, the bodies and conditions of its loops; never a fused
computation or a reducer) and how many of its asynchronous start/done pairs have computation
scheduled between them; and `fsdp_budget(layers, width, batch, devices, itemsize)`, the bytes of
weights per device with replicated data parallelism and with FSDP, the layer gathered whole, the
bytes each device receives per step with FSDP (gather, re-gather, reduce-scatter) and with an
all-reduce, and the flops per device per step.

What this kernel believes, it observed or verified itself:

- test_fsdp_step (`check_fsdp_step`). Every run draws two meshes where the process has several
  devices: all of them, and fewer of them (a divisor), each in a shuffled order, with one axis
  "fsdp"; they are built in the student's process (performance-08's probe `sharding.mesh`) and stay
  there. *This kernel calls* `fsdp_step` on each, and the function it returns goes, unread, to the
  probe `fsdp.export_step`, which exports it for a network whose depth (6 to 8 layers), width and
  batch are drawn here, the stacked weights split by rows of every layer and the batch by rows.
  *Verified* here (`checks.programs.program_from`): the program spans the mesh's devices; in its
  StableHLO (the program before XLA's passes, what the function itself wrote) the layers are
  scanned (a `while`, fewer gathers written than layers), every all-gather takes one layer's row
  block and gives the layer (nothing of the batch gathered, not all layers at once), every
  reduce-scatter takes one layer's gradient and gives its block, every all-reduce is a scalar
  (the loss's psum, not a gradient's, nor a gradient summed in pieces smaller than a row: a red-team
  step that did so in a loop passed) run outside every loop and at most LOSS_ALL_REDUCES times a
  step (`all_reduce_runs`: a gradient summed one scalar at a time, in a loop or written out, passed
  the reading of sizes alone), and there is no other collective; compiled here on CPU
  devices of this kernel's own (`sharding.own_devices`), its temporary buffers
  (`memory_analysis().temp_size_in_bytes`) hold fewer than three layers whole beyond the
  activations (a scan without remat keeps every gathered layer for the backward pass, a Python loop
  lets XLA gather them all at once: both hold every layer); run on fresh values that never leave
  this kernel, it gives the float64 NumPy loss and gradient (tolerance of the matrix-product
  precision measured here), the gradient split like the weights, block i on the mesh's i-th device,
  the loss whole on all. A loss divided by the process's device count instead of the mesh's is
  wrong on the smaller mesh, which every run includes.
- test_overlap (`check_collective_overlap`): *observed*, values only. HLO text written here: an
  entry computation with synchronous collectives, asynchronous start/done pairs (interleaved, some
  with fusions, dots or convolutions scheduled between start and done, some with only bookkeeping
  between), a `while` whose body holds collectives and pairs of its own (and sometimes a loop of
  its own), fused computations holding collectives (as a TPU's fused asynchronous collectives do;
  not counted), a reducer, instruction names that lie, metadata that mention collectives. Every
  run's schedules hold each case of SEPARATING: a collective in a loop body, in a loop's
  condition, in a loop inside a loop and in a fused computation, a pair with only bookkeeping
  between, a collective named after another kind, and pairs closed out of order so that matching
  them by order gives other overlapped counts; so counting ENTRY alone, every computation, bodies
  without conditions or ENTRY's loops alone fails every run, as do names read for operations,
  any instruction taken for overlap and pairs matched by order. Every count must be exact.
- test_memory (`check_fsdp_budget`): *observed*, values only: depths, widths, batches, device
  counts and item sizes drawn here (every run both item sizes, 2 and 4 bytes, and two devices
  beside more); the six numbers exactly.

What a forger would have to do: the student's functions are called by this kernel; a replaced probe
would have to send a program that, compiled and run here, scans, gathers and reduce-scatters one
layer at a time in its own text, holds no more than a few layers at once, and computes the loss and
gradient of values it never sees: an FSDP step, wherever it is written.
"""
from __future__ import annotations

import re

import numpy as np

from . import CheckFailed, numerics, programs, remote, sharding, verdict
from .student_calls import call_student, one_line

AXIS = "fsdp"
KINDS = sharding.KINDS
COMPUTE_OPS = ("fusion", "dot", "convolution")  # the lesson's COMPUTE_OPS: operations that do arithmetic
# Temp bytes beyond the activations, in whole layers, that a scanned, rematerialized step stays under
GATHERED_LAYERS = 3


# --- what the step computes, in float64 ---------------------------------------------------------
def reference_step(stacked, x, y):
    """Loss mean((h_L - y)**2), h_{l+1} = tanh(h_l @ w_l), and its gradient in every w_l (stacked), in float64."""
    ws = np.asarray(stacked, np.float64)
    hs = [np.asarray(x, np.float64)]
    for w in ws:
        hs.append(np.tanh(hs[-1] @ w))
    y = np.asarray(y, np.float64)
    dh = 2.0 * (hs[-1] - y) / y.size
    grads = np.zeros_like(ws)
    for layer in reversed(range(len(ws))):
        dz = dh * (1.0 - hs[layer + 1] ** 2)
        grads[layer] = hs[layer].T @ dz
        dh = dz @ ws[layer].T
    return float(np.mean((hs[-1] - y) ** 2)), grads


def draw_network(rng: np.random.Generator, k: int) -> dict:
    """Float32 stacked weights (6 to 8 layers of width 192 or 256) and a batch of 2 to 4 rows per device.

    The width is a multiple of every mesh size drawn, and a device's batch rows are never as many
    as a layer block's rows, so a gathered batch cannot pass for a gathered layer."""
    layers = int(rng.integers(6, 9))
    width = int(rng.choice([192, 256]))
    batch = k * int(rng.integers(2, 5))
    stacked = (rng.standard_normal((layers, width, width)) / np.sqrt(width)).astype(np.float32)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    y = rng.uniform(-0.9, 0.9, (batch, width)).astype(np.float32)
    return {"stacked": stacked, "x": x, "y": y}


def meshes(rng: np.random.Generator, count: int) -> list[dict]:
    """All `count` devices in a shuffled order and, where there are several, fewer of them (a
    divisor): a step that uses the process's device count instead of its mesh's fails every run."""
    drawn = [{"order": [int(i) for i in rng.permutation(count)], "shape": [count], "axes": [AXIS]}]
    if count > 1:
        while drawn[0]["order"] == list(range(count)):
            drawn[0]["order"] = [int(i) for i in rng.permutation(count)]
        smaller = [d for d in range(2, count) if count % d == 0] or [1]
        k = int(rng.choice(smaller))
        drawn.append({"order": [int(i) for i in rng.choice(count, size=k, replace=False)], "shape": [k],
                      "axes": [AXIS]})
    return drawn


# --- test_fsdp_step: the collectives a program wrote --------------------------------------------
_WRITTEN = re.compile(r'"?stablehlo\.(all_gather|reduce_scatter|all_reduce|all_to_all|collective_permute)"?')
_SIGNATURE = re.compile(r":\s*\(([^()]*)\)\s*->\s*(.+)$")
_TENSOR = re.compile(r"tensor<([^>]*)>")


def _dims(tensor: str) -> list[int]:
    return [int(d) for d in tensor.split("x")[:-1]] if "x" in tensor else []


def written_collectives(text: str) -> list[dict]:
    """Each collective of a StableHLO module: its op, its operands' and results' shapes.

    An op with a region (the reduction of an all-reduce or a reduce-scatter) prints its types after
    the region closes: the first line after it that starts with `})` and holds a signature."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        match = _WRITTEN.search(line)
        if not match or "=" not in line.split(match.group(0))[0]:
            continue
        signature = _SIGNATURE.search(line) if "({" not in line.split(match.group(0))[1] else None
        j = i
        while signature is None and j + 1 < len(lines):
            j += 1
            if lines[j].lstrip().startswith("})"):
                signature = _SIGNATURE.search(lines[j])
        if signature is None:
            found.append({"op": match.group(1), "operands": [], "results": []})
            continue
        found.append({"op": match.group(1), "operands": [_dims(t) for t in _TENSOR.findall(signature.group(1))],
                      "results": [_dims(t) for t in _TENSOR.findall(signature.group(2))]})
    return found


def _size(dims: list[int]) -> int:
    return int(np.prod(dims)) if dims else 1


# What the lesson's step sums whole on every device: the loss, once (a psum, or its pmean), and at most
# what autodiff or a device count may add beside it: a few scalars, each run once per step, outside the loop.
LOSS_ALL_REDUCES = 4
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_OP_NAME = re.compile(r'"[a-z_]+\.[\w.]+"')  # a generic operation's name ("stablehlo.while"): kept
_FUNCTION = re.compile(r"\bfunc\.func\b([^@]*)@([\w$.-]+)")
_REFERENCE = re.compile(r"@([\w$.-]+)")


def _unquoted(line: str) -> str:
    """The line without quoted text (locations, names a student chose, which may hold braces), generic
    operations' names kept."""
    return _QUOTED.sub(lambda m: m.group(0) if _OP_NAME.fullmatch(m.group(0)) else '""', line)


def all_reduce_runs(text: str) -> dict:
    """How often a step runs the all-reduces its StableHLO module writes: {"in_loop": how many of them
    run inside a loop (a `while` region of their own function, or of a function that calls theirs, at
    any depth of calls), "runs": how many times the others run per step (once for each path of calls
    from a public function; text outside any function counts as one)}."""
    lines = [_unquoted(raw) for raw in text.splitlines()]
    defined = {m.group(2) for line in lines for m in [_FUNCTION.search(line)] if m}
    public = {""}
    calls: dict[str, list[tuple[str, bool]]] = {}  # callee: (caller, referenced inside a loop there)
    reduces: list[tuple[str, bool]] = []            # (function, inside a loop there)
    regions: list[bool] = []       # each open brace: is it a loop's region?
    loop_op: dict[int, bool] = {}  # per depth: was the last operation written there a while?
    function, function_depth = "", -1
    for line in lines:
        named = _FUNCTION.search(line)
        if named:
            function, function_depth = named.group(2), len(regions)
            if "private" not in named.group(1):
                public.add(function)
        stripped = line.strip()
        if stripped and not stripped.startswith(("}", "^", "cond", "do")):
            loop_op[len(regions)] = bool(re.search(r"\bstablehlo\.while\b", line))
        in_loop = any(regions)
        if re.search(r"\bstablehlo\.all_reduce\b", line):
            reduces.append((function, in_loop))
        if not named:
            for callee in set(_REFERENCE.findall(line)) & defined:
                calls.setdefault(callee, []).append((function, in_loop))
        for char in line:
            if char == "{":
                regions.append(loop_op.get(len(regions), False))
            elif char == "}" and regions:
                regions.pop()
        if function and len(regions) <= function_depth:
            function, function_depth = "", -1
    reached: dict[str, tuple[bool, int]] = {}

    def reach(name: str, seen: tuple = ()) -> tuple[bool, int]:
        """(reached inside a loop, runs per step otherwise) of function `name`."""
        if name not in reached:
            inside, count = False, int(name in public)
            for caller, at_loop in calls.get(name, []):
                if caller in seen or caller == name:  # a cycle (JAX writes none): read as a loop
                    inside = True
                    continue
                caller_inside, caller_runs = reach(caller, seen + (name,))
                inside = inside or at_loop or caller_inside
                count += 0 if at_loop else caller_runs
            reached[name] = (inside, count)
        return reached[name]

    in_loop = runs = 0
    for name, at_loop in reduces:
        inside, count = reach(name)
        if at_loop or inside:
            in_loop += 1
        else:
            runs += count
    return {"in_loop": in_loop, "runs": runs}


def collective_problems(text: str, k: int, net: dict) -> list[str]:
    """How the collectives a step wrote depart from FSDP's: scanned, one layer gathered at a time,
    its gradient reduce-scattered, nothing of the batch gathered, no gradient-sized all-reduce."""
    what = "the function fsdp_step returned"
    layers, width = net["stacked"].shape[:2]
    rows, batch_rows = width // k, net["x"].shape[0] // k
    ops = written_collectives(text)
    gathers = [c for c in ops if c["op"] == "all_gather"]
    scatters = [c for c in ops if c["op"] == "reduce_scatter"]
    if not gathers:
        return [f"{what} gathers no layer in its own program (before XLA's passes): inside the scanned layer, "
                f"jax.lax.all_gather(block, '{AXIS}', tiled=True) the layer's rows before it is used"]
    if not re.search(r"\bstablehlo\.while\b", text) or len(gathers) >= layers:
        return [f"{what} does not scan over the stacked layers: {len(gathers)} all-gather(s) written for {layers} "
                "layers and " + ("a loop" if re.search(r"\bstablehlo\.while\b", text) else "no loop")
                + ". Scan the layer body (jax.lax.scan over the stacked weights, jax.checkpoint on the body): a "
                "Python loop writes one gather per layer, and XLA is then free to gather every layer at once"]
    for c in gathers:
        # A layer's block, as is or with a unit axis (an untiled gather's operand): its elements tell.
        taken = c["operands"][0] if c["operands"] else []
        if c["operands"] and _size(taken) == batch_rows * width and batch_rows != rows:
            return [f"{what} gathers the batch (an all-gather of a {taken} block): FSDP splits the batch and keeps it "
                    "split; only the weights are gathered, one layer at a time"]
        if not c["operands"] or _size(taken) != rows * width or not c["results"] \
                or _size(c["results"][0]) != width * width:
            return [f"{what} gathers something other than one layer's rows (an all-gather of {taken or '?'} into "
                    f"{c['results'][0] if c['results'] else '?'}; a layer's block here is {[rows, width]}): "
                    "gather one layer at a time, inside the scanned body"]
    if not scatters:
        return [f"{what} does not reduce-scatter the gradient in its own program: each device should receive only its "
                f"block of the summed gradient (what jax.grad writes through the all-gather, or "
                f"jax.lax.psum_scatter over '{AXIS}' by hand), not the whole sum (an all-reduce) sliced afterwards"]
    for c in scatters:
        if not c["operands"] or _size(c["operands"][0]) != width * width or not c["results"] \
                or _size(c["results"][0]) != rows * width:
            return [f"{what} reduce-scatters something other than one layer's gradient into its block "
                    f"({c['operands'][0] if c['operands'] else '?'} into {c['results'][0] if c['results'] else '?'})"]
    for c in ops:
        if c["op"] == "all_reduce" and max([_size(d) for d in c["operands"] + c["results"]] or [0]) > 1:
            return [f"{what} all-reduces an array of {max(_size(d) for d in c['operands'] + c['results'])} elements: "
                    "only the loss is summed whole on every device; a gradient is reduce-scattered (an all-reduce "
                    "moves twice a reduce-scatter's bytes and leaves every device the whole sum)"]
        if c["op"] in ("all_to_all", "collective_permute"):
            return [f"{what} writes a {c['op']}: an FSDP step needs only the gathers, the reduce-scatters and the "
                    "loss's psum"]
    # Scalars each, and yet a gradient summed one element at a time: judged by how often the step runs them.
    reduced = all_reduce_runs(text)
    if reduced["in_loop"]:
        return [f"{what} all-reduces inside a loop ({reduced['in_loop']} all-reduce(s) written in a scanned body or "
                "a loop of its own): a step sums only its loss whole, once, after the scan; each layer's gradient "
                "is reduce-scattered (a gradient summed element by element moves every element of every layer "
                "to every device)"]
    if reduced["runs"] > LOSS_ALL_REDUCES:
        return [f"{what} runs {reduced['runs']} all-reduces per step: a step sums only its loss whole on every "
                f"device (at most {LOSS_ALL_REDUCES} scalars); each layer's gradient is reduce-scattered"]
    return []


def memory_problems(compiled, net: dict, k: int) -> list[str]:
    """A scanned, rematerialized step keeps about one gathered layer (and the one being differentiated)
    in its temporary buffers; a step that holds every layer at once has as many as it has layers."""
    layers, width = net["stacked"].shape[:2]
    layer_bytes = width * width * 4
    activations = layers * (net["x"].shape[0] // k) * width * 4  # one stack of every layer's input rows
    try:
        temp = int(compiled.memory_analysis().temp_size_in_bytes)
    except Exception:  # a backend that reports no memory analysis: nothing to judge here
        return []
    allowed = GATHERED_LAYERS * layer_bytes + 6 * activations
    if temp > allowed:
        return [f"compiled here, the function fsdp_step returned keeps {temp} bytes of temporary buffers per device, "
                f"{temp / layer_bytes:.1f} layers' worth ({layers} layers): FSDP holds one layer whole at a time. "
                "Scan over the stacked layers with jax.checkpoint on the layer body, so the backward pass gathers "
                "each layer again instead of keeping every gathered layer from the forward pass"]
    return []


def verify_step_program(program, mesh: dict, net: dict, precision: str) -> list[str]:
    """How an exported FSDP step departs from the lesson's, judged here."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    what = "the function fsdp_step returned"
    k = len(mesh["order"])
    if program.nr_devices != k:
        return [f"{what} runs on {program.nr_devices} device(s), the mesh you are given has {k}: "
                "build the shard_map on that mesh"]
    if k > 1:
        problems = collective_problems(program.mlir_module(), k, net)
        if problems:
            return problems
    here = sharding.mesh_here(mesh)
    stacked_split = NamedSharding(here, P(None, AXIS, None))
    rows, whole = NamedSharding(here, P(AXIS, None)), NamedSharding(here, P())
    # The layout its arguments take is read from the program itself, not from the export's word: run
    # on split arrays, a program that takes them whole would be handed them re-laid out, silently.
    arguments = [(net["stacked"], stacked_split), (net["x"], rows), (net["y"], rows)]
    given = [sharding.on_devices(hlo, here) for hlo in program.in_shardings_hlo]
    if len(given) != len(arguments) or any(
            taken is None or sharding.device_blocks(taken, a.shape) != sharding.device_blocks(want, a.shape)
            for taken, (a, want) in zip(given, arguments)):
        return [f"{what} should take the stacked weights split by rows of every layer (in_specs P(None, '{AXIS}', "
                f"None)) and the batch split by rows (P('{AXIS}', None)), block i on the mesh's i-th device"]
    try:
        placed = [jax.device_put(a, on) for a, on in arguments]
        compiled = jax.jit(program.call).lower(*placed).compile()
        loss, grads = compiled(*placed)
        got_loss, got = np.asarray(loss), np.asarray(grads)
        blocks = sharding.device_blocks(grads.sharding, grads.shape)
        loss_blocks = sharding.device_blocks(loss.sharding, loss.shape)
    except Exception as exc:
        return [f"{what} did not compile and run here on stacked weights and a batch split by rows over '{AXIS}', "
                f"returning (loss, gradient of the stacked weights) ({type(exc).__name__})"]
    want_loss, want = reference_step(net["stacked"], net["x"], net["y"])
    if got.shape != want.shape:
        return [f"{what} gives a gradient of shape {list(got.shape)} for weights of shape {list(want.shape)}: "
                "the gradient of the stacked weights, stacked the same way"]
    try:
        numerics.check_close(got_loss.reshape(-1)[:1] if got_loss.size == 1 else got_loss, np.asarray([want_loss]),
                             f"the loss {what} computes (the mean over the whole batch)", precision=precision)
        numerics.check_close(got, want, f"the gradient {what} computes (the whole batch's, each device's part "
                             "counted once)", precision=precision)
    except (CheckFailed, TypeError, ValueError) as exc:
        return [str(exc)]
    if loss_blocks != sharding.device_blocks(whole, loss.shape):
        return [f"{what} should give the loss whole on every device (out_specs P())"]
    if blocks != sharding.device_blocks(stacked_split, want.shape):
        return [f"{what} should give the gradient split like the weights (P(None, '{AXIS}', None)), block i on the "
                "mesh's i-th device"]
    if k > 1:
        return memory_problems(compiled, net, k)
    return []


def check_fsdp_step(fsdp_step, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    count, precision = sharding.device_count(), numerics.matmul_precision()
    for mesh in meshes(rng, count):
        net = draw_network(rng, len(mesh["order"]))
        held = remote.stand_in("sharding.mesh", mesh["order"], mesh["shape"], mesh["axes"])
        fn = call_student("fsdp_step", fsdp_step, held)
        shapes = {"stacked": list(net["stacked"].shape), "x": list(net["x"].shape), "y": list(net["y"].shape)}
        report = remote.probe("fsdp.export_step", fn, held, shapes)
        if not isinstance(report, dict) or "program" not in report:
            raised = report.get("raised") if isinstance(report, dict) else None
            raise CheckFailed("the function fsdp_step returned could not be exported for the mesh it was given "
                              f"({len(mesh['order'])} devices), with the stacked weights split by rows of every layer "
                              f"and the batch by rows over '{AXIS}'" + (f" ({one_line(raised)})" if raised else "")
                              + ": return jax.shard_map(...) over that mesh, taking (stacked, x, y)")
        specs = [(shapes["stacked"], "float32"), (shapes["x"], "float32"), (shapes["y"], "float32")]
        program = programs.program_from(report["program"], specs, what="the function fsdp_step returned")
        problems = verify_step_program(program, mesh, net, precision)
        if problems and len(mesh["order"]) < count:
            problems = [f"on a mesh of {len(mesh['order'])} of the {count} devices: {problems[0]}"] + problems[1:]
        verdict(problems)


# --- test_overlap -------------------------------------------------------------------------------
def _shape(rng) -> str:
    return f"f32[{int(rng.integers(2, 300))},{int(rng.integers(2, 300))}]{{1,0}}"


class _Schedule:
    """Scheduled HLO text drawn piece by piece, and the counts its scheduled computations hold."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self.serial = rng, iter(range(1, 100_000))
        self.expected: dict = {}
        self.computations: list[str] = []   # text of every computation but ENTRY, callees first
        self.fused_collectives = 0          # collectives inside fused computations (never counted)
        self.loop_collectives = 0           # counted collectives in loop bodies and conditions
        # What separates the readings the lesson rules out, counted as the text is drawn:
        self.condition_collectives = 0      # in a loop's condition (a reader of bodies alone misses them)
        self.nested_collectives = 0         # in a loop inside a loop (a reader of ENTRY's loops alone misses them)
        self.idle_pairs = 0                 # pairs with instructions between, none of them compute
        self.misnamed = 0                   # collectives named after another kind
        self.lifo_overlapped: dict = {}     # overlapped counts if pairs were matched by order, not operand

    def n(self) -> int:
        return next(self.serial)

    def name_for(self, kind: str, suffix: str) -> str:
        roll = self.rng.random()
        if roll < 0.4:
            return f"%{kind}{suffix}.{self.n()}"
        if roll < 0.7:
            other = str(self.rng.choice([k for k in KINDS if k != kind]))
            self.misnamed += int(suffix != "-done")
            return f"%{other}{suffix}.{self.n()}"
        return f"%{self.rng.choice(['tmp', 'x', 'collective'])}.{self.n()}"

    def bookkeeping(self) -> str:
        op = str(self.rng.choice(["get-tuple-element", "bitcast", "copy-start", "copy-done", "parameter", "constant"]))
        name = str(self.rng.choice([f"%{op}.{self.n()}", f"%all-gather-done.{self.n()}", f"%fusion.{self.n()}"]))
        return f"  {name} = {_shape(self.rng)} {op}(%p.{self.n()})"

    def fused(self) -> str:
        """A fused computation that holds collectives (as a TPU's fused asynchronous collective does)."""
        name = f"%{self.rng.choice(['fused_computation', 'async_collective_fusion', 'all-gather-fusion'])}.{self.n()}"
        inside = []
        for _ in range(int(self.rng.integers(1, 3))):
            kind = str(self.rng.choice(KINDS))
            inside.append(f"  %{kind}.{self.n()} = f32[8,8]{{1,0}} {kind}(%p.1), channel_id={self.n()}, "
                          "replica_groups={{0,1,2,3}}, dimensions={0}")
            self.fused_collectives += 1
        self.computations.append(f"{name} (p.1: f32[8,8]) -> f32[8,8] {{\n  %p.1 = f32[8,8]{{1,0}} parameter(0)\n"
                                 + "\n".join(inside) + f"\n  ROOT %tanh.{self.n()} = f32[8,8]{{1,0}} tanh(%p.1)\n}}\n")
        return name

    def compute(self) -> str:
        op = str(self.rng.choice(COMPUTE_OPS))
        name = str(self.rng.choice([f"%{op}.{self.n()}", f"%async-collective-start.{self.n()}",
                                    f"%all-reduce-start.{self.n()}", f"%reduce_scatter_fusion.{self.n()}"]))
        tail = f", kind=kLoop, calls={self.fused()}" if op == "fusion" else ""
        return (f"  {name} = {_shape(self.rng)} {op}(%p.{self.n()}){tail}, "
                f'metadata={{op_name="jit(step)/{self.rng.choice(KINDS)}"}}')

    def count(self, kind: str, in_loop: bool, depth: int = 0) -> None:
        self.expected.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
        self.loop_collectives += int(in_loop)
        self.nested_collectives += int(depth >= 2)

    def done(self, kind: str, start: str, computed: bool) -> str:
        self.expected[kind]["overlapped"] += int(computed)
        return f"  {self.name_for(kind, '-done')} = {_shape(self.rng)} {kind}-done({start})"

    def close(self, lines: list, pending: list, lifo: list, at: int) -> None:
        """The done of pending pair `at`; the pair matched by order instead (the last start still open)
        is recorded apart, as is a pair with only bookkeeping, collectives or loops between."""
        start, kind, computed, opened = pending.pop(at)
        self.idle_pairs += int(not computed and len(lines) > opened + 1)
        last_kind, last_computed = lifo.pop()
        self.lifo_overlapped[last_kind] = self.lifo_overlapped.get(last_kind, 0) + int(last_computed)
        lines.append(self.done(kind, start, computed))

    def lines(self, steps: int, depth: int, in_loop: bool) -> list[str]:
        """One scheduled computation's instructions: collectives, pairs, compute, bookkeeping, loops."""
        rng, pending, lines = self.rng, [], []
        lifo = []  # (kind, computed) of each open start, in order: what a reader matching by order sees
        for _ in range(steps):
            roll = rng.random()
            if (roll < 0.25 or (roll < 0.35 and len(pending) > 2)) and pending:
                self.close(lines, pending, lifo, int(rng.integers(0, len(pending))))
            elif roll < 0.45:
                kind = str(rng.choice(KINDS))
                start = self.name_for(kind, "-start")
                lines.append(f"  {start} = ({_shape(rng)}, {_shape(rng)}) {kind}-start(%p.{self.n()}), "
                             f"channel_id={self.n()}, replica_groups={{{{0,1,2,3}}}}")
                pending.append((start, kind, False, len(lines) - 1))
                lifo.append((kind, False))
                self.count(kind, in_loop=in_loop, depth=depth)
            elif roll < 0.6:
                kind = str(rng.choice(KINDS))
                reducer = ", to_apply=%add.0" if kind in ("all-reduce", "reduce-scatter") else ""
                lines.append(f"  {self.name_for(kind, '')} = {_shape(rng)} {kind}(%p.{self.n()}), "
                             f"channel_id={self.n()}, replica_groups={{{{0,1}},{{2,3}}}}{reducer}")
                self.count(kind, in_loop=in_loop, depth=depth)
            elif roll < 0.8:
                lines.append(self.compute())
                pending = [(s, k, True, at) for s, k, _, at in pending]
                lifo = [(k, True) for k, _ in lifo]
            elif roll < 0.88 and depth < 2:
                lines.append(self.loop(depth + 1))
            else:
                lines.append(self.bookkeeping())
        while pending:
            at = int(rng.integers(0, len(pending)))
            if rng.random() < 0.5:
                lines.append(self.compute())
                pending = [(s, k, True, i) for s, k, _, i in pending]
                lifo = [(k, True) for k, _ in lifo]
            self.close(lines, pending, lifo, at)
        return lines

    def crossed_pairs(self) -> list[str]:
        """Two pairs of one kind in ENTRY, the later one done first, a compute between the two dones:
        only the earlier pair is overlapped. Pairing by print order (a start closed by the next done of
        its kind) reads it the other way; the done's operand, as the lesson pairs them, reads it right."""
        kind = str(self.rng.choice(KINDS))
        first, second = self.name_for(kind, "-start"), self.name_for(kind, "-start")
        lines = []
        for start in (first, second):
            lines.append(f"  {start} = ({_shape(self.rng)}, {_shape(self.rng)}) {kind}-start(%p.{self.n()}), "
                         f"channel_id={self.n()}, replica_groups={{{{0,1,2,3}}}}")
            self.count(kind, in_loop=False)
        # A reader matching by order (the last start still open) reads these two as the operand does.
        self.lifo_overlapped[kind] = self.lifo_overlapped.get(kind, 0) + 1
        return lines + [self.done(kind, second, False), self.compute(), self.done(kind, first, True)]

    def loop(self, depth: int) -> str:
        """A while instruction; its condition (a synchronous all-reduce in it, half the time) and body
        are scheduled computations of their own, written before their caller."""
        tag = self.n()
        kind = str(self.rng.choice(KINDS))
        check = ""
        if self.rng.random() < 0.5:
            check = (f"  {self.name_for(kind, '')} = f32[] {kind}(%g.{tag}), channel_id={self.n()}, "
                     "replica_groups={{0,1,2,3}}\n")
            self.count(kind, in_loop=True, depth=depth)
            self.condition_collectives += 1
        body = self.lines(int(self.rng.integers(5, 10)), depth, in_loop=True)
        self.computations.append(
            f"%region_cond.{tag} (p.{tag}: (s32[], f32[8,8])) -> pred[] {{\n  %p.{tag} = (s32[], f32[8,8]{{1,0}}) "
            f"parameter(0)\n  %g.{tag} = s32[] get-tuple-element(%p.{tag}), index=0\n" + check
            + f"  %c.{tag} = s32[] constant(4)\n"
              f"  ROOT %lt.{tag} = pred[] compare(%g.{tag}, %c.{tag}), direction=LT\n}}\n")
        self.computations.append(f"%region_body.{tag} (p.{tag}: (s32[], f32[8,8])) -> (s32[], f32[8,8]) {{\n"
                                 f"  %p.{tag} = (s32[], f32[8,8]{{1,0}}) parameter(0)\n" + "\n".join(body)
                                 + f"\n  ROOT %t.{tag} = (s32[], f32[8,8]{{1,0}}) tuple(%p.{tag})\n}}\n")
        parts = [f"condition=%region_cond.{tag}", f"body=%region_body.{tag}"]
        if self.rng.random() < 0.5:
            parts.reverse()
        return f"  %while.{tag} = (s32[], f32[8,8]{{1,0}}) while(%tuple.{self.n()}), {', '.join(parts)}"


def synthetic_schedule(rng: np.random.Generator) -> tuple[str, dict]:
    """A scheduled program: ENTRY and its loops with synchronous collectives and asynchronous pairs,
    fused computations holding collectives, a reducer; and the expected {kind: {"count", "overlapped"}}
    of ENTRY and the loops' conditions and bodies."""
    drawn = _Schedule(rng)
    entry = drawn.lines(int(rng.integers(14, 26)), 0, in_loop=False)
    entry.insert(int(rng.integers(0, len(entry) + 1)), drawn.loop(1))  # at least one loop
    entry += drawn.crossed_pairs()  # after every other pair is done: nothing pending spans it
    reducer = ("%add.0 (a.0: f32[], b.0: f32[]) -> f32[] {\n  %a.0 = f32[] parameter(0)\n  %b.0 = f32[] parameter(1)\n"
               "  ROOT %sum.0 = f32[] add(%a.0, %b.0)\n}\n")
    text = ("HloModule jit_step, is_scheduled=true\n\n" + reducer + "\n" + "\n".join(drawn.computations)
            + "\nENTRY %main.1 () -> f32[] {\n" + "\n".join(entry) + "\n  ROOT %tuple.9 = () tuple()\n}\n")
    expected = {kind: dict(e) for kind, e in drawn.expected.items() if e["count"]}
    by_order = {kind: n for kind, n in drawn.lifo_overlapped.items() if n}
    return text, expected, {"fused": drawn.fused_collectives, "in_loops": drawn.loop_collectives,
                            "in_conditions": drawn.condition_collectives, "nested": drawn.nested_collectives,
                            "idle_pairs": drawn.idle_pairs, "misnamed": drawn.misnamed,
                            "order_differs": by_order != {k: e["overlapped"] for k, e in expected.items()
                                                          if e["overlapped"]}}


# Each reading the lesson rules out, and what in a run's schedules separates it from the rule:
# ENTRY alone (a loop's collective), every computation (a fused one), bodies alone (a condition's),
# ENTRY's loops alone (a loop in a loop), any instruction between as overlap (a pair with only
# bookkeeping between), names for operations (a collective named after another kind), pairs by order
# (the overlapped counts differ when pairs close out of order; and, in every schedule, two pairs of one
# kind closed the later first, which a start closed by the next done of its kind misreads).
SEPARATING = ("in_loops", "fused", "in_conditions", "nested", "idle_pairs", "misnamed", "order_differs")


def schedules(rng: np.random.Generator, count: int = 4) -> list[tuple[str, dict]]:
    """`count` schedules among which an overlapped pair, a synchronous collective and every case of
    SEPARATING occur: each reading the lesson rules out fails every run."""
    while True:
        drawn = [synthetic_schedule(rng) for _ in range(count)]
        entries = [entry for _, expected, _ in drawn for entry in expected.values()]
        overlapped = sum(e["overlapped"] for e in entries)
        if (overlapped and sum(e["count"] for e in entries) > overlapped
                and all(any(where[case] for _, _, where in drawn) for case in SEPARATING)):
            return [(text, expected) for text, expected, _ in drawn]


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
        return ["the collectives' counts are not those of the program's schedule (count instructions by their "
                "operation, not by their names or metadata, in ENTRY and in the conditions and bodies of its loops, "
                "never inside a fused computation; an asynchronous -start/-done pair is one collective)"]
    if got != expected:
        return ["the overlapped counts are not those of the program: a pair is overlapped when an instruction "
                "whose operation is in COMPUTE_OPS lies between its -start and the -done that names it as "
                "operand (bookkeeping such as get-tuple-element, copies or other collectives does not count)"]
    return []


def check_collective_overlap(collective_overlap, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for text, expected in schedules(rng):
        found = call_student("collective_overlap", collective_overlap, text)
        verdict(overlap_problems(found, expected))


# --- test_memory --------------------------------------------------------------------------------
def expected_budget(layers: int, width: int, batch: int, devices: int, itemsize: int) -> dict:
    layer = width * width * itemsize
    share = layer // devices * (devices - 1)  # what one device receives of a layer: every block but its own
    return {"replicated": layers * layer, "fsdp": layers * layer // devices, "gathered": layer,
            "moved": layers * 3 * share, "all_reduce": layers * 2 * share,
            "flops": layers * 8 * (batch // devices) * width * width}


BUDGET_HINTS = {
    "replicated": "with replicated data parallelism every device holds every layer's weights whole",
    "fsdp": "with FSDP each device holds 1/devices of the rows of every layer",
    "gathered": "one layer whole: what one all-gather puts on a device while the layer is used",
    "moved": "per step and layer a device receives every other device's block three times: the forward pass's "
             "gather, the backward pass's re-gather (remat) and the gradient's reduce-scatter",
    "all_reduce": "a ring all-reduce is a reduce-scatter and then an all-gather: a device receives every other "
                  "device's block of each layer's gradient twice",
    "flops": "per layer a device does 2*b*width**2 flops forward, as many again to recompute it (remat) and "
             "4*b*width**2 backward, b its own rows of the batch",
}


def budget_cases(rng: np.random.Generator, count: int = 4) -> list[tuple[int, int]]:
    """(devices, itemsize) of `count` budgets: every run holds both item sizes and two devices beside
    more, so a budget that assumes float32, or a layer's transfer of one block (right on two devices
    only), fails every run."""
    devices = [2, int(rng.choice([4, 8, 16, 64]))] + [int(rng.choice([2, 4, 8, 16, 64])) for _ in range(count - 2)]
    itemsizes = [2, 4] + [int(rng.choice([2, 4])) for _ in range(count - 2)]
    return [(devices[i], itemsizes[j]) for i, j in zip(rng.permutation(count), rng.permutation(count))]


def check_fsdp_budget(fsdp_budget, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for devices, itemsize in budget_cases(rng):
        layers, width = int(rng.integers(2, 97)), devices * int(rng.integers(1, 200))
        batch = devices * int(rng.integers(1, 300))
        found = remote.values_only(call_student("fsdp_budget", fsdp_budget, layers, width, batch, devices, itemsize))
        want = expected_budget(layers, width, batch, devices, itemsize)
        if not isinstance(found, dict):
            raise CheckFailed(f"fsdp_budget should return a dict with {sorted(want)}")
        problems = []
        for key, value in want.items():
            try:
                right = int(found[key]) == value and float(found[key]) == value
            except (KeyError, TypeError, ValueError, OverflowError):
                right = False
            if not right:
                problems.append(f"{key} is not right ({layers} layers of width {width}, a batch of {batch}, {devices} "
                                f"devices, {itemsize}-byte items): {BUDGET_HINTS[key]}")
        verdict(problems)
