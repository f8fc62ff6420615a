"""performance-11 (FSDP as practised): the hidden checks without a kernel, against the samples.

The samples in samples/performance-11/ are the right and wrong implementations: each one's cells
are run here in one namespace with the lesson's own definitions, and every hidden check is run on
them in-process (without a channel the probe runs in this process, on this process's devices), so
each sample must pass exactly the checks of the cells its `expect:` line gives full marks. This
process has one device (the fast tier), where a gather and a reduce-scatter move nothing and a
wrong step can compute the right values; one test grades the step's samples again in a subprocess
with eight CPU devices, where every run draws the full mesh and a smaller one, shuffled, and the
collectives, the scan and the compiled memory are judged. Then further
wrong methods, the drawn schedules, the notebook, and the artifact.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ROOT
from lesson_samples import assert_samples_cover_every_cell, judged_cells
from lesson_samples import lesson_namespace as run_lesson_cells

from perfcourse.checks import CheckFailed, fsdp, programs
from perfcourse.course import read_notebook
from perfcourse.kernel.probes import fsdp as probe
from perfcourse.kernel.probes import sharding as mesh_probe
from perfcourse.samples import build, discover

LESSON = "performance-11"
CHECKS = {
    "test_fsdp_step": lambda ns, seed: fsdp.check_fsdp_step(ns["fsdp_step"], np.random.default_rng(seed)),
    "test_overlap": lambda ns, seed: fsdp.check_collective_overlap(ns["collective_overlap"],
                                                                   np.random.default_rng(seed)),
    "test_memory": lambda ns, seed: fsdp.check_fsdp_budget(ns["fsdp_budget"], np.random.default_rng(seed)),
}
SOLUTION_CELL = {"test_fsdp_step": "fsdp_step", "test_overlap": "collective_overlap", "test_memory": "fsdp_budget"}
# The lesson's given cells the solution cells use: the environment (DEVICES), the mesh and specs, the kinds.
GIVEN = ("EIGHT_CPU_DEVICES = ", "ROWS = P(", "COMPUTE_OPS = (")


def lesson_namespace(nb) -> dict:
    return run_lesson_cells(nb, GIVEN)


SAMPLES = {s.case: s for s in discover(ROOT, [LESSON])}
GRADED = sorted(case for case in SAMPLES if case != "release")
# The step's wrong answers (samples and MORE_WRONG below) that only several devices tell apart: on one,
# a gather and a reduce-scatter move nothing, a sum over devices sums one part, a layer block is the
# whole layer and the process's device count is the mesh's, so these pass the step's check there, and
# the eight-device test judges them. Every other wrong step fails on one device too (measured:
# own-mesh, "untiled gathers, never reshaped", "the gradient of the last layer only"), so it is judged here.
NEED_SEVERAL_DEVICES = {"gradients-whole", "jit-without-shard-map", "local-mean", "psum-then-slice",
                        "a loss of one device's rows", "python-loop", "scan-without-remat", "gathers-the-batch",
                        "global-device-count", "fresh-checkpoint-around-the-scan", "fresh-gathers-the-stack-once"}


def several_devices() -> bool:
    return len(mesh_probe.lesson_devices()) > 1


def grade(case: str, seed: int) -> dict:
    """{cell: passed} of the checks of the cells the sample replaces (the solution: every cell)."""
    sample = SAMPLES[case]
    return judged_cells(sample, lesson_namespace(build(ROOT, sample)), CHECKS, SOLUTION_CELL, seed)[0]


@pytest.mark.parametrize("case", GRADED)
def test_each_sample_passes_exactly_the_checks_it_expects(case):
    sample = SAMPLES[case]
    for cell, passed in grade(case, sorted(SAMPLES).index(case)).items():
        if case in NEED_SEVERAL_DEVICES and not sample.expected[cell] and not several_devices():
            continue  # the eight-device test judges this one
        assert passed == (sample.expected[cell] > 0), (cell, case)


EIGHT = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, {tests!r})
    import test_performance_11 as t
    from perfcourse.checks import CheckFailed
    assert len(t.mesh_probe.lesson_devices()) == 8
    results = {{case: t.grade(case, 3) for case in t.GRADED}}
    more = {{}}
    for name, (cell, words, source) in t.MORE_WRONG.items():
        namespace = t.lesson_namespace(t.build(t.ROOT, t.SAMPLES["solution"]))
        exec(source, namespace)
        try:
            t.CHECKS[cell](namespace, 3)
            more[name] = "passed"
        except CheckFailed as exc:
            more[name] = str(exc)
    # A program exported by a replaced probe: the solution's step, its arguments taken whole.
    import jax, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from perfcourse.checks import fsdp, numerics, sharding
    rng = np.random.default_rng(3)
    mesh = fsdp.meshes(rng, 8)[0]  # every device, shuffled
    net = fsdp.draw_network(rng, len(mesh["order"]))
    here = sharding.mesh_here(mesh)
    step = t.lesson_namespace(t.build(t.ROOT, t.SAMPLES["solution"]))["fsdp_step"](here)
    layouts = {{}}
    for name, specs in (("split", (P(None, fsdp.AXIS, None), P(fsdp.AXIS, None))), ("whole", (P(), P()))):
        on = [NamedSharding(here, spec) for spec in specs]
        struct = lambda a, s: jax.ShapeDtypeStruct(a.shape, np.float32, sharding=s)
        program = jax.export.deserialize(jax.export.export(jax.jit(step, in_shardings=(on[0], on[1], on[1])),
                                                           platforms=("cpu",))(
            struct(net["stacked"], on[0]), struct(net["x"], on[1]), struct(net["y"], on[1])).serialize())
        layouts[name] = fsdp.verify_step_program(program, mesh, net, numerics.matmul_precision())
    # The collectives read from the solution's own StableHLO: a gather per scan (forward, remat), one reduce-scatter.
    on = [NamedSharding(here, P(None, fsdp.AXIS, None)), NamedSharding(here, P(fsdp.AXIS, None))]
    lowered = jax.jit(step).lower(*(jax.ShapeDtypeStruct(a.shape, np.float32, sharding=s)
                                    for a, s in ((net["stacked"], on[0]), (net["x"], on[1]), (net["y"], on[1]))))
    written = [(c["op"], c["operands"], c["results"]) for c in fsdp.written_collectives(lowered.as_text())]
    print(json.dumps({{"samples": results, "more": more, "layouts": layouts, "written": written,
                      "width": int(net["stacked"].shape[1])}}))
''')


@pytest.mark.slow
def test_checks_grade_each_sample_as_it_expects_on_eight_devices():
    """Every sample and every further wrong method graded in a process with eight CPU devices, as
    the lesson's first cell sets them up (the graded sample class proves every sample end to end)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    proc = subprocess.run([sys.executable, "-c", EIGHT.format(tests=str(ROOT / "tests"))], cwd=ROOT,
                          text=True, capture_output=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for case, passed in results["samples"].items():
        for cell, ok in passed.items():
            assert ok == (SAMPLES[case].expected[cell] > 0), (cell, case)
    for name, message in results["more"].items():
        assert re.search(MORE_WRONG[name][1], message), (name, message)
    # The arguments' layout is read from the program, not taken from the probe's word for it.
    assert results["layouts"]["split"] == []
    assert results["layouts"]["whole"] and "split by rows" in results["layouts"]["whole"][0]
    width = results["width"]
    assert sorted(op for op, _, _ in results["written"]) == ["all_gather", "all_gather", "all_reduce", "reduce_scatter"]
    for op, operands, produced in results["written"]:
        if op == "all_gather":
            assert operands == [[width // 8, width]] and produced == [[width, width]]
        if op == "reduce_scatter":
            assert operands == [[width, width]] and produced == [[width // 8, width]]
        if op == "all_reduce":
            assert operands == [[]] and produced == [[]]


def test_every_wrong_sample_loses_exactly_one_cell_and_every_cell_has_one():
    assert_samples_cover_every_cell(SAMPLES, CHECKS)


# The solution's step with another return line (`result`): the step's further wrong methods.
def solution_step(result: str) -> str:
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    source = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "fsdp_step")
    returned = 'return jax.lax.psum(part, "fsdp"), grads'
    assert returned in source
    return source.replace(returned, f"return {result}")


# Further wrong methods, judged here only: each must fail the check of its own cell, with these words.
MORE_WRONG = {
    "untiled gathers, never reshaped": ("test_fsdp_step", "gradient|loss|compile and run|export", """
def fsdp_step(mesh):
    def local(stacked, x, y):
        def layer(h, block):
            return jnp.tanh(h @ jax.lax.all_gather(block, "fsdp")), None
        h, _ = jax.lax.scan(layer, x, stacked)
        return jnp.mean(h), stacked
    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
"""),
    "a loss of one device's rows": ("test_fsdp_step", "loss", solution_step(
        'jax.lax.pmax(part * jax.lax.axis_size("fsdp"), "fsdp"), grads')),
    "the gradient of the last layer only": ("test_fsdp_step", "gradient", solution_step(
        'jax.lax.psum(part, "fsdp"), grads.at[:-1].set(0.0)')),
    "pairs matched by order, not by operand": ("test_overlap", "overlapped", """
def collective_overlap(hlo_text):
    import re
    found, pending, keep = {}, [], True
    for line in hlo_text.splitlines():
        if line[:1].strip() and line.rstrip().endswith("{"):
            keep = line.startswith("ENTRY") or "region_body" in line or "region_cond" in line
        m = re.match(r"\\s*(?:ROOT )?(\\S+) = .*? ([\\w-]+)\\((.*)", line)
        if not m or not keep:
            continue
        name, op, args = m.groups()
        kind = re.sub(r"-(start|done)$", "", op)
        if kind in COLLECTIVE_KINDS:
            if op.endswith("-done"):
                k, busy = pending.pop()
                found[k]["overlapped"] += busy
            else:
                found.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
                if op.endswith("-start"):
                    pending.append([kind, 0])
        elif op in COMPUTE_OPS:
            for entry in pending:
                entry[1] = 1
    return found
"""),
    "every mention counted": ("test_overlap", "count", """
def collective_overlap(hlo_text):
    found = {}
    for kind in COLLECTIVE_KINDS:
        c = hlo_text.count(f" {kind}(") + hlo_text.count(f" {kind}-start(")
        if c:
            found[kind] = {"count": c, "overlapped": 0}
    return found
"""),
    "gathered bytes of one device's block": ("test_memory", "gathered", """
def fsdp_budget(layers, width, batch, devices, itemsize):
    layer = width * width * itemsize
    others = layer // devices * (devices - 1)
    return {"replicated": layers * layer, "fsdp": layers * layer // devices, "gathered": layer // devices,
            "moved": layers * 3 * others, "all_reduce": layers * 2 * others,
            "flops": layers * 8 * (batch // devices) * width * width}
"""),
    "flops without the recomputation": ("test_memory", "flops", """
def fsdp_budget(layers, width, batch, devices, itemsize):
    layer = width * width * itemsize
    others = layer // devices * (devices - 1)
    return {"replicated": layers * layer, "fsdp": layers * layer // devices, "gathered": layer,
            "moved": layers * 3 * others, "all_reduce": layers * 2 * others,
            "flops": layers * 6 * (batch // devices) * width * width}
"""),
}


@pytest.mark.parametrize("name", sorted(MORE_WRONG))
def test_more_wrong_methods_lose_their_cell(name):
    cell, words, source = MORE_WRONG[name]
    if name in NEED_SEVERAL_DEVICES and not several_devices():
        pytest.skip("one device does not tell this method from the solution: the eight-device test judges it")
    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    exec(source, namespace)
    with pytest.raises(CheckFailed, match=words):
        CHECKS[cell](namespace, 3)


def test_the_cases_left_to_several_devices_are_wrong_steps():
    """A renamed sample or method must not leave a stale name here (nor a right one skipped)."""
    step_wrong = {case for case in GRADED if not SAMPLES[case].expected["test_fsdp_step"]}
    step_wrong |= {name for name, (cell, _, _) in MORE_WRONG.items() if cell == "test_fsdp_step"}
    assert NEED_SEVERAL_DEVICES <= step_wrong, NEED_SEVERAL_DEVICES - step_wrong


def test_drawn_schedules_hold_every_case_and_the_expected_counts_are_the_checks_own():
    rng = np.random.default_rng(0)
    for text, expected in fsdp.schedules(rng):
        lines = text.splitlines()
        assert lines[0].startswith("HloModule") and any(line.startswith("ENTRY") for line in lines)
        starts = sum(1 for line in lines if "-start(" in line and any(f" {k}-start(" in line for k in fsdp.KINDS))
        dones = sum(1 for line in lines if any(f" {k}-done(" in line for k in fsdp.KINDS))
        assert starts == dones, "every start has its done"
        assert all(e["overlapped"] <= e["count"] for e in expected.values())
        # Every while names a condition and a body written in the text, each once.
        for line in lines:
            if " while(" in line:
                for key in ("condition=", "body="):
                    name = line.split(key)[1].split(",")[0].strip()
                    assert sum(1 for other in lines if other.startswith(name + " ")) == 1, name
    # The separating cases each schedule reports are counted as drawn: each occurs in some draws.
    drawn = [fsdp.synthetic_schedule(np.random.default_rng(seed)) for seed in range(40)]
    assert all(set(where) == set(fsdp.SEPARATING) for _, _, where in drawn)
    assert all(any(where[case] for _, _, where in drawn) for case in fsdp.SEPARATING)
    found = fsdp.schedules(np.random.default_rng(7))
    assert len(found) == 4


# The overlap cell's wrong readings: every run of the check, whatever its seed, holds what fails each.
OVERLAP_WRONG = ("entry-only", "conditions-left-out", "loops-of-entry-only", "counts-every-computation",
                 "counts-start-and-done", "any-instruction-between", "reads-names", "fresh-pairs-by-order")


def test_every_run_of_the_overlap_check_fails_each_wrong_reading():
    by_order = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    exec(MORE_WRONG["pairs matched by order, not by operand"][2], by_order)
    readers = {case: lesson_namespace(build(ROOT, SAMPLES[case]))["collective_overlap"] for case in OVERLAP_WRONG}
    readers["pairs matched by order"] = by_order["collective_overlap"]
    assert all(not SAMPLES[case].expected["test_overlap"] for case in OVERLAP_WRONG)
    for seed in range(10, 16):
        for name, reader in readers.items():
            with pytest.raises(CheckFailed):
                fsdp.check_collective_overlap(reader, np.random.default_rng(seed))


def test_every_run_of_the_budget_check_holds_both_item_sizes_and_two_devices_beside_more():
    for seed in range(20):
        cases = fsdp.budget_cases(np.random.default_rng(seed))
        assert {itemsize for _, itemsize in cases} == {2, 4}
        assert 2 in {devices for devices, _ in cases} and max(devices for devices, _ in cases) > 2


def test_the_probe_exports_a_program_the_trusted_side_runs():
    """The lesson's solution, exported by the probe for a mesh of this process's devices, verified."""
    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    count = len(mesh_probe.lesson_devices())
    mesh = {"order": list(range(count))[::-1], "shape": [count], "axes": ["fsdp"]}
    net = fsdp.draw_network(np.random.default_rng(1), count)
    held = mesh_probe.mesh(mesh["order"], mesh["shape"], mesh["axes"])
    shapes = {"stacked": list(net["stacked"].shape), "x": list(net["x"].shape), "y": list(net["y"].shape)}
    report = probe.export_step(namespace["fsdp_step"](held), held, shapes)
    specs = [(shapes["stacked"], "float32"), (shapes["x"], "float32"), (shapes["y"], "float32")]
    program = programs.program_from(report["program"], specs)
    assert fsdp.verify_step_program(program, mesh, net, "float32") == []


def test_every_run_draws_the_full_mesh_and_a_smaller_one():
    for seed in range(20):
        drawn = fsdp.meshes(np.random.default_rng(seed), 8)
        assert [m["shape"][0] for m in drawn][0] == 8 and drawn[1]["shape"][0] in (2, 4)
        assert drawn[0]["order"] != list(range(8)) and len(set(drawn[1]["order"])) == drawn[1]["shape"][0]
    assert [m["shape"] for m in fsdp.meshes(np.random.default_rng(0), 1)] == [[1]]


def test_the_collectives_are_read_with_their_shapes_from_stablehlo():
    text = "\n".join([
        '    %0 = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 0 : i64}> : '
        '(tensor<24x192xf32>) -> tensor<192x192xf32>',
        '    %1 = "stablehlo.reduce_scatter"(%0) <{scatter_dimension = 0 : i64}> ({',
        '    ^bb0(%a: tensor<f32>, %b: tensor<f32>):',
        '      %2 = stablehlo.add %a, %b : tensor<f32>',
        '      stablehlo.return %2 : tensor<f32>',
        '    }) : (tensor<192x192xf32>) -> tensor<24x192xf32>',
        '    %3 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<0> : tensor<1x1xi64>}> ({',
        '    }) : (tensor<f32>) -> tensor<f32>',
    ])
    assert [(c["op"], c["operands"], c["results"]) for c in fsdp.written_collectives(text)] == [
        ("all_gather", [[24, 192]], [[192, 192]]), ("reduce_scatter", [[192, 192]], [[24, 192]]),
        ("all_reduce", [[]], [[]])]
    net = {"stacked": np.zeros((6, 192, 192), np.float32), "x": np.zeros((16, 192), np.float32)}
    assert "scan" in fsdp.collective_problems(text, 8, net)[0]  # no loop written
    looped = text + "\n    %4:2 = stablehlo.while(%iterArg = %c) : tensor<i32>"
    assert fsdp.collective_problems(looped, 8, net) == []
    batch = looped.replace("tensor<24x192xf32>) -> tensor<192x192xf32>", "tensor<2x192xf32>) -> tensor<16x192xf32>")
    assert "gathers the batch" in fsdp.collective_problems(batch, 8, net)[0]
    whole = looped.replace("(tensor<f32>) -> tensor<f32>", "(tensor<192x192xf32>) -> tensor<192x192xf32>")
    assert "all-reduces" in fsdp.collective_problems(whole, 8, net)[0]


def test_the_reference_gradient_is_the_finite_difference_of_the_loss():
    rng = np.random.default_rng(2)
    net = fsdp.draw_network(rng, 2)
    loss, grads = fsdp.reference_step(net["stacked"], net["x"], net["y"])
    w = np.asarray(net["stacked"], np.float64)
    i, j, eps = 1, 0, 1e-6
    w[0, i, j] += eps
    up, _ = fsdp.reference_step(w, net["x"], net["y"])
    assert (up - loss) / eps == pytest.approx(grads[0, i, j], rel=1e-4, abs=1e-8)


def test_expected_budget_counts():
    assert fsdp.expected_budget(4, 16, 32, 8, 4) == {"replicated": 4096, "fsdp": 512, "gathered": 1024, "moved": 10752,
                                                     "all_reduce": 7168, "flops": 32768}
    one = fsdp.expected_budget(3, 8, 8, 1, 4)
    assert one["moved"] == one["all_reduce"] == 0 and one["fsdp"] == one["replicated"]


# --- the notebook ------------------------------------------------------------------------------
def grade_cells():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def test_grade_cells_and_points():
    assert {gid: c.metadata["nbgrader"]["points"] for gid, c in grade_cells().items()} == {
        "test_fsdp_step": 4, "test_overlap": 3, "test_memory": 3}


def test_public_tests_need_no_course_code_and_hidden_tests_call_the_checks():
    for cell in grade_cells().values():
        public, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert "perfcourse" not in public
        assert "fsdp_checks.check_" in hidden


def test_task_headings_precede_every_solution_cell():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    headings = [c.source for c in nb.cells if c.cell_type == "markdown" and "## Task " in c.source]
    assert [h.split("## Task ")[1].split(":")[0] for h in headings] == ["1", "2", "3"]


def test_the_first_cell_asks_for_eight_cpu_devices_before_jax_starts():
    first = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb").cells[1].source
    assert first.index("--xla_force_host_platform_device_count=8") < first.index("import jax")
    assert 'jax.devices("cpu")' in first


def test_the_lesson_uses_jax_shard_map_which_both_pinned_and_newest_jax_have():
    import jax

    assert hasattr(jax, "shard_map") and hasattr(jax.lax, "psum_scatter")
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    assert any("jax.shard_map(" in c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))


# --- the artifact ------------------------------------------------------------------------------
def committed():
    return json.loads((ROOT / "artifacts" / "cpu" / f"{LESSON}.json").read_text())


def test_artifact_counts_the_scanned_steps_collectives_and_the_memory_plans():
    stdout = committed()["stdout"]
    report = json.loads(stdout[stdout.index("{"):])
    found = report["compiled_collectives"]
    assert report["backend"] == "cpu"
    n = report["device_count"]
    assert report["budget"] == fsdp.expected_budget(report["layers"], report["width"], report["batch"], n, 4)
    memory = report["compiled_memory"]
    for name in ("replicated", "fsdp"):
        assert memory[name]["argument"] == report["budget"][name] + report["batch_bytes_per_device"]
        assert memory[name]["peak"] == (memory[name]["argument"] + memory[name]["output"] + memory[name]["temp"]
                                        - memory[name]["alias"])
    assert report["written_before_passes"]["while"] >= 2  # the forward and the backward scan
    assert all(entry["overlapped"] == 0 for entry in found.values()), "the CPU runs collectives synchronously"
    if n > 1:
        assert found["all-gather"]["count"] == 2 and found["reduce-scatter"]["count"] == 1  # forward, remat; autodiff's
        assert memory["fsdp"]["temp"] < 3 * report["width"] ** 2 * 4 < memory["replicated"]["peak"]
        assert memory["fsdp"]["peak"] < memory["replicated"]["peak"]


def test_artifact_draws_bars_and_a_flow_diagram_with_alt_text():
    recorded = committed()
    assert [p["kind"] for p in recorded["data"]["panels"]] == ["bar", "bar"]
    assert all("device" in p["title"] for p in recorded["data"]["panels"])  # the figure names the devices it ran on
    assert recorded["diagram"]["alt"] and recorded["diagram"]["panel"]["kind"] == "flow"


def test_the_budget_check_compares_values_so_whole_floats_pass_and_fractions_fail():
    """Task 3 asks for whole numbers, ints or floats whose value is whole: the check compares values."""
    def as_floats(*arguments):
        return {key: float(value) for key, value in fsdp.expected_budget(*arguments).items()}

    def flops_and_a_half(*arguments):
        budget = fsdp.expected_budget(*arguments)
        return {**budget, "flops": budget["flops"] + 0.5}

    fsdp.check_fsdp_budget(as_floats, np.random.default_rng(0))
    with pytest.raises(CheckFailed, match="flops is not right"):
        fsdp.check_fsdp_budget(flops_and_a_half, np.random.default_rng(0))


# --- the TPU's plans: the report's tpu_v5e_8_plans and the text's figures -----------------------------
def lesson_cell(cell_id: str) -> str:
    return next(c.source for c in read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb").cells
                if c.get("id") == cell_id)


def test_the_plan_reader_counts_every_all_gather_its_element_type_and_the_fused_starts():
    """The cell after Task 2 reads each TPU program with plan_and_gathers: a handwritten program with a
    bfloat16 gather inside a fused computation, a float32 one in ENTRY, an asynchronous start (not counted
    as `all-gather(`) and one fused collective start."""
    source = lesson_cell("ec6cd456")
    namespace = {"re": re}
    exec(source[source.index("def fused_collective_starts"):source.index("tpu_overlap = tpu_plans")], namespace)
    text = "\n".join([
        "HloModule example, is_scheduled=true",
        "%fused_gather (p.0: f32[8]) -> bf16[64] {",
        "  %p.0 = f32[8]{0} parameter(0)",
        "  %convert.1 = bf16[8]{0} convert(f32[8]{0} %p.0)",
        "  ROOT %all-gather.2 = bf16[64]{0:T(1024)(128)(2,1)} all-gather(bf16[8]{0} %convert.1), dimensions={0}",
        "}",
        "ENTRY %main (a: f32[8], b: f32[8]) -> f32[64] {",
        "  %async-collective-start.3 = (f32[8]{0}, bf16[64]{0}) fusion(f32[8]{0} %a), calls=%fused_gather",
        "  %all-gather.4 = f32[64]{0} all-gather(f32[8]{0} %b), dimensions={0}, metadata={op_name=\"all_gather\"}",
        "  %all-gather-start.5 = (f32[8]{0}, f32[64]{0}) all-gather-start(f32[8]{0} %b), dimensions={0}",
        "}"])

    class Compiled:
        def as_text(self):
            return text

        def memory_analysis(self):
            return type("Analysis", (), {"temp_size_in_bytes": 4096})()

    assert namespace["plan_and_gathers"](Compiled()) == {
        "temp_bytes": 4096, "all_gathers": 2, "bfloat16_all_gathers": 1, "fused_collective_starts": 1}


# The text's figures of the TPU's plans (four layers, a batch of 512, compiled for eight v5e chips), as the
# report records them in tpu_v5e_8_plans: a recording that differs means the text must change with it.
TPU_PLANS = {
    "without_flags": {"1024": (0, 2, 2, 0), "8192": (478_860_800, 2, 2, 0)},
    "with_pipelining_flags": {"1024": (0, 8, 8, 2), "8192": (603_334_656, 8, 8, 2)},
}


def test_every_tpu_figure_in_the_text_is_the_recordings():
    """Issue 50: the TPU figures of the text are the report's. The sentences are in the text; where the
    TPU recording holds tpu_v5e_8_plans each figure is the recorded one. A recording made before the
    report carried them lacks the key, and only a recording of an older text may lack it."""
    from perfcourse.artifacts.record import content_hash

    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    text = " ".join(" ".join(c.source for c in nb.cells if c.cell_type == "markdown").split())
    for sentence in ("has two all-gathers at both widths the report records (`tpu_v5e_8_plans`, 1024 and 8192)",
                     "both gather bfloat16",
                     "Task 3 counts the bytes of the program as written, float32",
                     "two fusions named `async-collective-start`, and eight all-gather instructions (fused "
                     "computations counted too), all bfloat16, at both widths",
                     "temporaries grow from 478,860,800 bytes to 603,334,656",
                     "keeps its gathered layers there and reports no temporary bytes at all",
                     "the temporaries hold them: 478,860,800 bytes"):
        assert sentence in text, sentence
    artifact = json.loads((ROOT / "artifacts" / "tpu" / f"{LESSON}.json").read_text())
    report = json.loads(artifact["stdout"][artifact["stdout"].index("{"):])
    if "tpu_v5e_8_plans" not in report:
        assert artifact["contentHash"] != content_hash(nb), "the TPU recording of the current text has no plans"
        return
    plans = report["tpu_v5e_8_plans"]
    assert (plans["layers"], plans["batch"]) == (4, 512)
    for flags, widths in TPU_PLANS.items():
        for width, (temp, gathers, bfloat16, fused) in widths.items():
            assert plans[flags][width] == {"temp_bytes": temp, "all_gathers": gathers, "bfloat16_all_gathers":
                                           bfloat16, "fused_collective_starts": fused}, (flags, width)
