"""performance-08 (eight devices): the hidden-test helpers without a kernel, on the samples' own code.

The solution cells of the source notebook and each sample's replacements are run here, in a
namespace holding the lesson's names, and graded by `perfcourse.checks.sharding` in-process (the
probes run in this process when no channel is installed): every sample must pass exactly the cells
its `# expect:` line says (the timer is the course's, given: performance-01 grades it). This
process has one device (the fast tier); one test repeats the grading in a subprocess with eight
CPU devices, where meshes are shuffled and collectives are required, and judges programs made to
look right without doing the step. The generic forger of the adversarial catalogue, run here on
the release's stubs, earns no cell. The timings scaling_evidence is graded on are drawn with every
verdict among them.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ROOT

from perfcourse import samples
from perfcourse.checks import CheckFailed, halves, sharding
from perfcourse.course import read_notebook

LESSON = "performance-08"
CHECKS = {
    "test_data_parallel": ("data_parallel", sharding.check_data_parallel),
    "test_collectives": ("collectives", sharding.check_collectives),
    "test_weights_split": ("weights_split", sharding.check_weights_split),
    "test_grad_with_psum": ("grad_with_psum", sharding.check_grad_with_psum),
    "test_compile_key": ("compiles_per_call", sharding.check_compile_key),
    "test_scaling_evidence": ("scaling_evidence", sharding.check_scaling_evidence),
}
# Cells whose wrong answers only several devices tell apart (on one, every layout is the whole
# array, a psum sums one part, and no sum across devices is needed).
LAYOUT_CELLS = ("test_data_parallel", "test_weights_split", "test_grad_with_psum")
PRELUDE = textwrap.dedent('''
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
    COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
''')


def solutions() -> dict[str, str]:
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    return {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in nb.cells
            if cell.metadata.get("nbgrader", {}).get("solution")}


def namespace(sample: samples.Sample) -> dict:
    """The sample's functions: the source's solutions with the sample's replacements."""
    cells = solutions()
    for kind, grade_id, source in sample.steps:
        if kind == "replace":
            cells[grade_id] = source
    ns: dict = {}
    exec(compile(PRELUDE, "<prelude>", "exec"), ns)  # noqa: S102 (the course's own samples)
    for source in cells.values():
        exec(compile(source, "<cell>", "exec"), ns)  # noqa: S102
    return ns


SAMPLES = [s for s in samples.discover(ROOT, [LESSON]) if s.case != "release"]


def grade(sample: samples.Sample, seed: int) -> dict[str, bool]:
    """Pass or fail per cell. A wrong sample is graded on the cells it gets wrong only: its other
    cells are the solution's own code, graded with the correct samples."""
    ns = namespace(sample)
    passed = {}
    wrong = [cell for cell in CHECKS if not sample.expected.get(cell, 1)]
    for cell, (name, check) in CHECKS.items():
        if wrong and cell not in wrong:
            continue
        try:
            check(ns[name], np.random.default_rng(seed))
            passed[cell] = True
        except CheckFailed:
            passed[cell] = False
    return passed


def test_every_sample_says_what_it_deserves():
    cases = {s.case for s in SAMPLES}
    assert {"solution", "alternative", "other-idioms"} <= cases
    wrong = [s for s in SAMPLES if any(v == 0 for v in s.expected.values())]
    assert len(wrong) >= 4


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.case)
def test_checks_grade_each_sample_as_it_expects_on_one_device(sample):
    passed = grade(sample, seed=1)
    for cell, ok in passed.items():
        if cell in LAYOUT_CELLS and not sample.expected[cell]:
            continue  # on one device every layout is whole and a psum sums one part: the 8-device test judges these
        assert ok == (sample.expected[cell] > 0), (cell, sample.case)


EIGHT = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, {tests!r})
    import numpy as np
    import test_performance_08 as t
    from perfcourse.checks import sharding
    assert sharding.device_count() == 8
    results = {{}}
    for sample in t.SAMPLES:
        if (sample.case in ("solution", "autodiff-sums-for-you")
                or any(not sample.expected[cell] for cell in t.LAYOUT_CELLS)):
            results[sample.case] = [t.grade(sample, seed) for seed in (3,)]
    results["crafted"] = t.crafted_programs()
    results["forger"] = t.forger_verdicts()
    print(json.dumps(results))
''')


def forger_verdicts() -> dict[str, str]:
    """adversarial/performance-08/generic-forger.py on the release's stubs, in this process (run with
    eight devices): it replaces the probe dispatcher, found through sys.modules, with one answering
    from the probes' arguments. {cell: what its check raised}."""
    from perfcourse.kernel import probes
    import perfcourse.kernel.agent  # noqa: F401 (imported in a student's kernel, as when grading)

    forger = samples.parse(ROOT / "adversarial" / LESSON / "generic-forger.py", LESSON, "hostile")
    release = read_notebook(ROOT / "release" / LESSON / f"{LESSON}.ipynb")
    ns: dict = {}
    exec(compile(PRELUDE, "<prelude>", "exec"), ns)  # noqa: S102 (the course's own files)
    for cell in release.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            exec(compile(cell.source, "<stub>", "exec"), ns)  # noqa: S102
    ((_, _, cell),) = forger.steps
    honest = probes.run
    # The lesson's values it forges for the public checks are not here: the hidden checks decide.
    exec(compile(cell.replace("\n_forge_public_values()\n", "\n"), "<forger>", "exec"), ns)  # noqa: S102
    assert probes.run is not honest
    verdicts = {}
    for cell, (name, check) in CHECKS.items():
        try:
            check(ns[name], np.random.default_rng(0))
            verdicts[cell] = "passed"
        except (CheckFailed, NotImplementedError) as exc:
            verdicts[cell] = f"{type(exc).__name__}: {exc}"
    probes.run = honest
    return verdicts


def crafted_programs() -> dict[str, list[str]]:
    """Programs a forged export probe could send, each judged as the grading kernel judges them
    (run with eight devices): {label: the problems found}. Only the lesson's step, laid out as asked
    (on the given mesh's devices, whatever their axes are called), has none."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    from perfcourse.checks import numerics, programs
    from perfcourse.kernel.probes import sharding as probes

    rng, precision = np.random.default_rng(5), numerics.matmul_precision()

    def step(learning_rate=sharding.LEARNING_RATE, activation=jnp.tanh):
        def sgd_step(w, x, y):
            loss, grad = jax.value_and_grad(lambda w: jnp.mean((activation(x @ w) - y) ** 2))(w)
            return w - learning_rate * grad, loss
        return sgd_step

    def gathers_the_batch(mesh):
        def sgd_step(w, x, y):
            whole = NamedSharding(mesh, P())
            x, y = (jax.lax.with_sharding_constraint(a, whole) for a in (x, y))
            return step()(w, x, y)
        return sgd_step

    def judged(fn, mesh, specs, layout):
        parts = mesh["shape"] + [1] * (2 - len(mesh["shape"]))
        arrays = sharding.fresh_arrays(rng, 4, parts[0], 4, parts[1])  # rows that 8 devices divide too
        on = probes.mesh(mesh["order"], mesh["shape"], mesh["axes"])
        held = fn(on) if fn.__name__ == "gathers_the_batch" else fn
        other = specs.get("mesh", lambda on: on)(on)  # a mesh of the student's own making, or the one given
        structs = [jax.ShapeDtypeStruct(arrays[n].shape, np.float32, sharding=NamedSharding(other, specs[n]))
                   for n in ("w", "x", "y")]
        try:
            data = bytes(jax.export.export(jax.jit(held), platforms=("cpu",))(*structs).serialize())
        except Exception as exc:
            return [f"not exported: {type(exc).__name__}"]
        program = programs.program_from(data, [(list(arrays[n].shape), "float32") for n in ("w", "x", "y")])
        return sharding.verify_program(program, mesh, arrays, layout, "crafted", precision)

    full = {"order": [3, 1, 0, 2, 7, 6, 5, 4], "shape": [8], "axes": ["data"]}
    half = {"order": [6, 1, 0, 2], "shape": [4], "axes": ["data"]}
    grid = {"order": [3, 1, 0, 2, 7, 6, 5, 4], "shape": [4, 2], "axes": ["data", "model"]}
    rows = {"w": P(), "x": P("data", None), "y": P("data", None)}
    split = {"w": P(None, "model"), "x": P("data", None), "y": P("data", "model")}
    everything = Mesh(np.array(jax.devices()), ("data",))
    dp, ws = sharding.DATA_PARALLEL, sharding.WEIGHTS_SPLIT
    return {
        "solution": judged(step(), full, rows, dp),
        "solution on part of the devices": judged(step(), half, rows, dp),
        "weights split": judged(step(), grid, split, ws),
        "replicated": judged(step(), full, {"w": P(), "x": P(), "y": P()}, dp),
        "data parallel for weights split": judged(step(), grid, rows, ws),
        "a mesh of its own": judged(step(), half, {**rows, "mesh": lambda on: everything}, dp),
        "the given devices, other axis names": judged(step(), full,
                                                      {"w": P(), "x": P("batch"), "y": P("batch"),
                                                       "mesh": lambda on: Mesh(on.devices, ("batch",))}, dp),
        "the given mesh, explicit axes": judged(step(), grid, {**split, "mesh": lambda on: Mesh(
            on.devices, on.axis_names, axis_types=(jax.sharding.AxisType.Explicit,) * 2)}, ws),
        "no tanh": judged(step(activation=lambda z: z), full, rows, dp),
        "another learning rate": judged(step(learning_rate=0.2), full, rows, dp),
        "gathers the batch": judged(gathers_the_batch, full, rows, dp),
    }


@pytest.mark.slow
def test_checks_grade_each_sample_as_it_expects_on_eight_devices():
    """The solution, and the samples whose layouts only several devices tell apart (the graded
    sample class, where the notebook sets 8 devices, proves every sample end to end)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    proc = subprocess.run([sys.executable, "-c", EIGHT.format(tests=str(ROOT / "tests"))], cwd=ROOT,
                          text=True, capture_output=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    crafted, forged = results.pop("crafted"), results.pop("forger")
    # The forger earns no cell: each check called the student's stub itself, and its scaling stand-in,
    # right on the public check's timings, reads the drawn ones from their medians.
    scaling = forged.pop("test_scaling_evidence")
    assert all("is not done yet" in verdict for verdict in forged.values()), forged
    assert scaling.startswith("CheckFailed: verdict is"), scaling
    assert [label for label, problems in crafted.items() if not problems] == \
        ["solution", "solution on part of the devices", "weights split", "the given devices, other axis names",
         "the given mesh, explicit axes"], crafted
    assert "sums no gradient" in " ".join(crafted["gathers the batch"])
    by_case = {s.case: s for s in SAMPLES}
    for case, runs in results.items():
        for passed in runs:
            for cell, ok in passed.items():
                assert ok == (by_case[case].expected[cell] > 0), (cell, case)


def test_collective_counts_read_instructions_only():
    text = "\n".join([
        "  %all-reduce-start.1 = (f32[4]{0}, f32[4]{0}) all-reduce-start(f32[4]{0} %p), to_apply=%add",
        "  %all-reduce-done.1 = f32[4]{0} all-reduce-done((f32[4]{0}, f32[4]{0}) %all-reduce-start.1)",
        "  %all-reduce.2 = (f32[16,64]{1,0}, f32[]) all-reduce(%dot.1, %all-reduce.1), replica_groups=[4,2]<=[8]",
        "  ROOT %all-gather.3 = f32[8]{0} all-gather(%x), dimensions={0}",
        '  %add.4 = f32[4]{0} add(%all-gather.3, %y), metadata={op_name="jit(f)/reduce-scatter("}',
        "  %get-tuple-element.5 = f32[4]{0} get-tuple-element(%all-to-all.9), index=0",
    ])
    assert sharding.count_collectives(text) == {"all-reduce": 2, "all-gather": 1}
    for seed in range(20):
        text, expected = sharding.synthetic_hlo(np.random.default_rng(seed))
        assert sharding.count_collectives(text) == expected


def test_the_reference_step_is_the_gradient():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    w, x, y = (rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (8, 5), (8, 3)))
    grad = jax.grad(lambda w: jnp.mean((jnp.tanh(jnp.asarray(x) @ w) - y) ** 2))(jnp.asarray(w))
    new_w, loss = sharding.reference_step(w, x, y, learning_rate=1.0)
    np.testing.assert_allclose(w - new_w, np.asarray(grad), rtol=1e-4, atol=1e-5)
    assert loss == pytest.approx(float(np.mean((np.tanh(x.astype(np.float64) @ w) - y) ** 2)))


def test_expected_layouts_and_compile_keys():
    mesh = {"order": [3, 1, 2, 0], "shape": [2, 2], "axes": ["data", "model"]}
    layout = sharding.expected_layout(mesh, {"w": (6, 4)}, {"w": (None, "model")})["w"]
    assert layout == [{"device": 0, "index": [[0, 6], [2, 4]]}, {"device": 1, "index": [[0, 6], [2, 4]]},
                      {"device": 2, "index": [[0, 6], [0, 2]]}, {"device": 3, "index": [[0, 6], [0, 2]]}]
    calls = [{"kind": "uncommitted"}, {"kind": "rows", "order": [0, 1]}, {"kind": "uncommitted"},
             {"kind": "replicated", "order": [0, 1]}, {"kind": "rows", "order": [1, 0]}, {"kind": "device", "index": 0},
             {"kind": "rows", "order": [0]}, {"kind": "replicated", "order": [0]}]
    assert sharding.expected_compiles(calls) == [1, 1, 0, 1, 1, 1, 1, 0]


def test_every_run_hands_out_a_mesh_of_every_device_and_a_smaller_one():
    """A count taken from the process's devices (jax.device_count()) instead of the mesh's is right on
    a mesh of every device only: every draw holds a smaller mesh too, shuffled, and the whole one."""
    for seed in range(40):
        meshes = sharding.one_d_meshes(np.random.default_rng(seed), 8)
        sizes = sorted(len(m["order"]) for m in meshes)
        assert sizes[-1] == 8 and sizes[0] in (2, 4) and len(sizes) == 2, sizes
        for mesh in meshes:
            assert len(set(mesh["order"])) == len(mesh["order"]) and mesh["shape"] == [len(mesh["order"])]
        assert next(m["order"] for m in meshes if len(m["order"]) == 8) != list(range(8))
    assert [len(m["order"]) for m in sharding.one_d_meshes(np.random.default_rng(0), 1)] == [1]


def test_the_source_notebook_names_its_checks():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    hidden = "\n".join(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    for name in ("check_data_parallel", "check_collectives", "check_weights_split", "check_grad_with_psum",
                 "check_compile_key", "check_scaling_evidence"):
        assert f"sharding.{name}(" in hidden
    first = nb.cells[1].source
    flag = f"--xla_force_host_platform_device_count={sharding.GRADED_DEVICES}"  # what grading requires
    assert flag in first and first.index("XLA_FLAGS") < first.index("import jax")


def test_the_grading_kernel_compiles_on_devices_of_its_own():
    """The trusted kernel's JAX has the devices it started with (one, here and when grading): the
    programs it judges run on a CPU client it makes for itself."""
    import jax

    own = sharding.own_devices(sharding.GRADED_DEVICES)
    assert len(own) == sharding.GRADED_DEVICES and not set(own) & set(jax.devices())
    assert sharding.own_devices(2) == own[:2]


def test_collective_texts_lie_both_ways():
    """Every program names a collective after another kind, and another operation after a collective."""
    instruction = re.compile(r"^\s*(?:ROOT\s+)?(%[\w.\-]+) = .*?\s(" + "|".join(sharding.KINDS) + r")(-start|-done)?\(")
    for seed in range(20):
        text, _ = sharding.synthetic_hlo(np.random.default_rng(seed))
        lied, named = False, False
        for line in text.splitlines():
            found = instruction.match(line)
            name = line.split(" = ")[0].strip().removeprefix("ROOT ").lstrip("%") if " = " in line else ""
            after = next((k for k in sharding.KINDS if name.startswith((k, k.replace("-", "_")))), None)
            if found and after and after != found.group(2):
                lied = True
            if not found and after:
                named = True
        assert lied and named, seed


def test_warm_placements_compile_nothing_in_the_sequence():
    calls = [{"kind": "uncommitted"}, {"kind": "rows", "order": [0, 1]}, {"kind": "uncommitted"},
             {"kind": "device", "index": 1}]
    assert sharding.expected_compiles(calls, [{"kind": "rows", "order": [0, 1]}]) == [1, 0, 0, 1]
    for seed, count in zip(range(40), [8, 1] * 20):
        rng = np.random.default_rng(seed)
        calls = sharding.placement_sequence(rng, count)
        warm = sharding.warm_placements(rng, calls)
        keys = {sharding.placement_key(k) for k in calls}
        assert 1 <= len(warm) <= 2 and {sharding.placement_key(k) for k in warm} <= keys
        assert sharding.placement_key(calls[0]) not in {sharding.placement_key(k) for k in warm}
        expected = sharding.expected_compiles(calls, warm)
        assert expected != sharding.expected_compiles(calls) and expected[0] == 1
        assert expected != list(np.cumsum(expected))  # running totals never pass
        assert 1 in expected[1:]  # nor a count that ignores placements (1, then 0 for every call)


def test_scaling_timings_show_every_verdict_and_no_near_tie():
    """Each draw holds every verdict, and counts whose medians lie on both sides of one device's
    where the middle halves overlap (a verdict read from the medians fails there)."""
    for seed in range(30):
        cases = sharding.scaling_cases(np.random.default_rng(seed))
        found = [(count, entry, sharding.expected_scaling(warm)[1]["median_seconds"])
                 for warm in cases for count, entry in sharding.expected_scaling(warm).items() if count != 1]
        assert {entry["verdict"] for _, entry, _ in found} == {"faster", "slower", "within the spread"}
        unclear = [entry["median_seconds"] < one for _, entry, one in found if entry["verdict"] == "within the spread"]
        assert True in unclear and False in unclear
        # medians past one device's quartiles on both sides, their middle halves overlapping one device's
        past = set()
        for warm in cases:
            read = sharding.expected_scaling(warm)
            low, high = read[1]["middle_half"]
            past |= {"below" if entry["median_seconds"] < low else "above" for count, entry in read.items()
                     if entry["verdict"] == "within the spread" and not low <= entry["median_seconds"] <= high}
        assert past == {"below", "above"}
        assert all(1 in warm and 5 <= min(len(s) for s in warm.values()) for warm in cases)
        assert not any(sharding._close_calls(warm) for warm in cases[:3])
        touching = cases[3]  # the fourth: one device and a count whose middle halves touch exactly
        assert len(touching) == 2 and halves.margin(touching[max(touching)], touching[1]) == 0
        assert sharding.expected_scaling(touching)[max(touching)]["verdict"] == "within the spread"
    example = {1: [0.010, 0.011, 0.012, 0.013, 0.014], 8: [0.015, 0.016, 0.017, 0.018, 0.019, 0.020]}
    read = sharding.expected_scaling(example)
    assert read[8]["verdict"] == "slower" and np.allclose(read[8]["middle_half"], [0.01625, 0.01875])
    assert read[1] == {"median_seconds": 0.012, "middle_half": [0.011, 0.013], "speedup": 1.0, "efficiency": 1.0,
                       "verdict": "within the spread"}


def test_a_median_against_one_devices_quartiles_fails_the_scaling_check():
    """The rule compares middle halves: a median past one device's quartile, whose middle half still
    overlaps one device's, is within the spread."""
    def median_against_quartiles(warm_seconds):
        read = sharding.expected_scaling(warm_seconds)
        low, high = read[1]["middle_half"]
        for entry in read.values():
            median = entry["median_seconds"]
            entry["verdict"] = "faster" if median < low else "slower" if median > high else "within the spread"
        return read

    for seed in range(10):
        with pytest.raises(CheckFailed, match="verdict is"):
            sharding.check_scaling_evidence(median_against_quartiles, np.random.default_rng(seed))


def test_touching_middle_halves_read_as_apart_fail_the_scaling_check():
    """The rule's comparisons are strict: a count whose middle half only touches one device's is
    within the spread (the fourth dataset of every draw has one)."""
    def touching_counts(warm_seconds):
        read = sharding.expected_scaling(warm_seconds)
        one_low, one_high = read[1]["middle_half"]
        for count, entry in read.items():
            low, high = entry["middle_half"]
            if count != 1:
                entry["verdict"] = "faster" if high <= one_low else "slower" if low >= one_high else "within the spread"
        return read

    for seed in range(10):
        with pytest.raises(CheckFailed, match="timings 4 of 4"):
            sharding.check_scaling_evidence(touching_counts, np.random.default_rng(seed))
