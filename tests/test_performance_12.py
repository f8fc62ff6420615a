"""performance-12 (a first Pallas kernel): the hidden checks without a kernel, against the samples.

The samples in samples/performance-12/ are the right and wrong implementations: each one's cells
are run here in one namespace with the lesson's own definitions, and every hidden check is run on
them in-process (without a channel the probe runs in this process), so each sample must pass exactly
the checks of the cells its `expect:` line gives full marks. Then further wrong methods, the
products the tolerance check lends, the notebook, and the artifact.
"""
import json
import random
import re

import numpy as np
import pytest

from conftest import ROOT
from lesson_samples import assert_samples_cover_every_cell, judged_cells
from lesson_samples import lesson_namespace as run_lesson_cells

from perfcourse.checks import CheckFailed, numerics, pallas, programs
from perfcourse.course import read_notebook
from perfcourse.kernel.probes import pallas as probe
from perfcourse.samples import build, discover

LESSON = "performance-12"
CHECKS = {
    "test_matmul_kernel": lambda ns, seed: pallas.check_matmul_kernel(ns["matmul_kernel"], np.random.default_rng(seed)),
    "test_tiling": lambda ns, seed: pallas.check_tiling(ns["tiling"], np.random.default_rng(seed)),
    "test_traffic": lambda ns, seed: pallas.check_tiled_traffic(ns["tiled_traffic"], np.random.default_rng(seed)),
    "test_tolerance": lambda ns, seed: pallas.check_product_tolerance(ns["product_tolerance"], random.Random(seed)),
}
SOLUTION_CELL = {"test_matmul_kernel": "matmul_kernel", "test_tiling": "tiling", "test_traffic": "tiled_traffic",
                 "test_tolerance": "product_tolerance"}
# The lesson's given cells the solution cells use: the environment (pl, INTERPRET), the harness, the kernel.
GIVEN = ("INTERPRET = ", "def run_body(", "def tiled_matmul(")


def lesson_namespace(nb) -> dict:
    return run_lesson_cells(nb, GIVEN)


SAMPLES = {s.case: s for s in discover(ROOT, [LESSON])}
GRADED = sorted(case for case in SAMPLES if case != "release")


@pytest.mark.parametrize("case", GRADED)
def test_each_sample_passes_exactly_the_checks_it_expects(case):
    sample = SAMPLES[case]
    passed, expected = judged_cells(sample, lesson_namespace(build(ROOT, sample)), CHECKS, SOLUTION_CELL,
                                    sorted(SAMPLES).index(case))
    assert passed == expected


def test_every_wrong_sample_loses_exactly_one_cell_and_every_cell_has_one():
    assert_samples_cover_every_cell(SAMPLES, CHECKS)


# Further wrong methods, judged here only: each must fail the check of its own cell, with these words.
MORE_WRONG = {
    "a body that multiplies elementwise": ("test_matmul_kernel", "x @ y", """
def matmul_kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)
    o_ref[...] += x_ref[:, :o_ref.shape[1]] * y_ref[:o_ref.shape[0], :]
"""),
    "a body that zeroes at the second k step": ("test_matmul_kernel", "NaN|x @ y", """
def matmul_kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(2) == 1)
    def _():
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)
    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
"""),
    "an output block that never moves": ("test_tiling", "picks block", """
def tiling(m, k, n, bm, bn, bk):
    return ((m // bm, n // bn, k // bk),
            [pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            pl.BlockSpec((bm, bn), lambda i, j, kk: (0, 0)))
"""),
    "x's block picked by the output column": ("test_tiling", "picks block|outside", """
def tiling(m, k, n, bm, bn, bk):
    return ((m // bm, n // bn, k // bk),
            [pl.BlockSpec((bm, bk), lambda i, j, kk: (i, j)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)))
"""),
    "blocks in elements, not block units": ("test_tiling", "outside", """
def tiling(m, k, n, bm, bn, bk):
    return ((m // bm, n // bn, k // bk),
            [pl.BlockSpec((bm, bk), lambda i, j, kk: (i * bm, kk * bk)),
             pl.BlockSpec((bk, bn), lambda i, j, kk: (kk * bk, j * bn))],
            pl.BlockSpec((bm, bn), lambda i, j, kk: (i * bm, j * bn)))
"""),
    "swapped re-reads": ("test_traffic", "bytes is not right", """
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    moved = (m * k * (m // bm) + k * n * (n // bn) + m * n) * itemsize
    return {"flops": 2 * m * k * n, "bytes": moved, "intensity": 2 * m * k * n / moved}
"""),
    "bytes per FLOP": ("test_traffic", "intensity is not right", """
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    moved = (m * k * (n // bn) + k * n * (m // bm) + m * n) * itemsize
    return {"flops": 2 * m * k * n, "bytes": moved, "intensity": moved / (2 * m * k * n)}
"""),
    "a tolerance that never measures": ("test_tolerance", "never called", """
def product_tolerance(matmul):
    return {"relative_error": 0.0, "precision": "float32", "rtol": 1e-5, "atol": 1e-5}
"""),
    "a TF32 tolerance of float32's size": ("test_tolerance", "rtol should be", """
def product_tolerance(matmul):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 128)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = float(np.max(np.abs(np.asarray(matmul(a, b), np.float64) - exact)) / np.max(np.abs(exact)))
    precision = "float32" if error < 1e-5 else "TF32" if error < 1e-3 else "bfloat16 passes"
    tol = 3e-2 if precision == "bfloat16 passes" else 1e-5
    return {"relative_error": error, "precision": precision, "rtol": tol, "atol": tol}
"""),
}


@pytest.mark.parametrize("name", sorted(MORE_WRONG))
def test_more_wrong_methods_lose_their_cell(name):
    cell, words, source = MORE_WRONG[name]
    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    exec(source, namespace)
    with pytest.raises(CheckFailed, match=words):
        CHECKS[cell](namespace, 3)


def test_the_lent_products_show_their_precision_on_the_lessons_matrices():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 128)).astype(np.float32)
    for precision in numerics.PRECISIONS:
        product = pallas.LentProduct(precision)
        error = pallas.relative_error(product(a, b), a, b)
        assert numerics.precision_of(error) == precision, (precision, error)
        assert product.calls == 1 and product.last[0] is not a  # its own copies


def test_a_lent_product_refuses_what_is_not_two_matrices():
    with pytest.raises(ValueError):
        pallas.LentProduct(numerics.FLOAT32)(np.ones((3, 4), np.float32), np.ones((5, 2), np.float32))


def test_the_probe_exports_an_interpreted_program_that_starts_from_the_output_it_is_given():
    data = probe.export_kernel(pallas.reference_kernel, [16, 256, 256], [8, 128, 128])
    program = programs.program_from(data, [((16, 256), "float32"), ((256, 256), "float32"), ((16, 256), "float32")])
    pallas.check_grid_program(program, 16, 256, 256, 8, 128, 128, "the course's kernel")
    x, y = pallas.operands(np.random.default_rng(0), 16, 256, 256)
    for start in (np.full((16, 256), np.nan, np.float32), np.full((16, 256), 5.0, np.float32)):
        assert np.allclose(np.asarray(program.call(x, y, start)), x @ y, atol=1e-4)


def _exported(fn, *shapes):
    import jax
    structs = [jax.ShapeDtypeStruct(shape, "float32") for shape in shapes]
    return jax.export.deserialize(jax.export.export(jax.jit(fn))(*structs).serialize())


def test_a_program_that_is_not_the_course_pallas_call_is_refused_whatever_it_computes():
    import jax.numpy as jnp
    from jax import lax
    m, k, n, bm, bn, bk = 16, 256, 512, 8, 256, 128
    shapes = ((m, k), (k, n), (m, n))
    plain = _exported(lambda x, y, start: jnp.dot(x, y), *shapes)  # what a replaced probe once sent: 3/3

    def looped(x, y, start):  # a grid-like loop beside a product of the whole operands
        return lax.fori_loop(0, 2, lambda t, acc: acc + 0 * lax.dynamic_slice(x, (0, 0), (bm, bk)).sum(),
                             jnp.dot(x, y))
    for program, words in ((plain, "without the grid loop"), (_exported(looped, *shapes), "grid loop|whole operand")):
        with pytest.raises(CheckFailed, match=words):
            pallas.check_grid_program(program, m, k, n, bm, bn, bk, "the program")
    # The same program built with the course's pallas_call passes: the refusal is the structure's.
    exported = probe.export_kernel(pallas.reference_kernel, [m, k, n], [bm, bn, bk])
    pallas.check_grid_program(programs.program_from(exported, [(s, "float32") for s in shapes]),
                              m, k, n, bm, bn, bk, "the course's")


def test_drawn_sizes_are_tpu_legal_and_span_two_blocks_on_every_axis():
    rng = np.random.default_rng(0)
    for square in (None, False) * 25:
        m, k, n, bm, bn, bk = pallas.draw_sizes(rng, square=square)
        assert bm % 8 == 0 and bn % 128 == 0 and bk % 128 == 0
        assert min(m // bm, n // bn, k // bk) >= 2 and (m % bm, n % bn, k % bk) == (0, 0, 0)
        assert square is not False or bn != bk


SQUARE_Y = """
def tiling(m, k, n, bm, bn, bk):
    return ((m // bm, n // bn, k // bk),
            [pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bn, bk), lambda i, j, kk: (kk, j))],
            pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)))
"""
OLD_TRAFFIC = """
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    moved = (m * k * (n // bn) + k * n * (m // bm) + m * n) * itemsize
    return {"flops": 2 * m * k * n, "bytes": moved, "intensity": 2 * m * k * n / moved}
"""
X_ONLY_TRAFFIC = """
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    moved = (m * k * (n // bn if bk < k else 1) + k * n * (m // bm) + m * n) * itemsize
    return {"flops": 2 * m * k * n, "bytes": moved, "intensity": 2 * m * k * n / moved}
"""

Y_ONCE_AT_ONE_N = """
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    moved = (m * k * (n // bn if bk < k else 1) + k * n * (1 if bn == n else m // bm) + m * n) * itemsize
    return {"flops": 2 * m * k * n, "bytes": moved, "intensity": 2 * m * k * n / moved}
"""


@pytest.mark.parametrize("cell,source", [("test_tiling", SQUARE_Y), ("test_traffic", OLD_TRAFFIC),
                                         ("test_traffic", X_ONLY_TRAFFIC), ("test_traffic", Y_ONCE_AT_ONE_N)])
def test_every_run_draws_the_case_that_separates_each_lenient_reading(cell, source):
    # y blocks that are square only, a count that re-reads a block that stays put (x's at bk = k,
    # y's at bk = k and bn = n), and one that reads y once wherever bn = n (k in several blocks, y's
    # block still changes), fail in every run, not one in four or one in 39.
    namespace = lesson_namespace(build(ROOT, SAMPLES["solution"]))
    exec(source, namespace)
    for seed in range(30):
        with pytest.raises(CheckFailed):
            CHECKS[cell](namespace, seed)


def test_the_traffic_rule_is_the_count_of_block_changes_along_the_grid():
    rng = np.random.default_rng(5)
    for _ in range(40):
        gm, gn, gk = (int(v) for v in rng.integers(1, 4, size=3))
        bm, bn, bk = 8, 128, 128
        copies = {"x": 0, "y": 0, "o": 0}
        last = {}
        for point in np.ndindex(gm, gn, gk):
            i, j, kk = point
            for name, index, size in (("x", (i, kk), bm * bk), ("y", (kk, j), bk * bn), ("o", (i, j), bm * bn)):
                if last.get(name) != index:
                    copies[name], last[name] = copies[name] + size, index
        want = pallas.expected_traffic(gm * bm, gk * bk, gn * bn, bm, bn, bk, 4)["bytes"]
        assert want == 4 * sum(copies.values()), (gm, gn, gk)


def test_the_checks_read_no_clock():
    import ast
    tree = ast.parse((ROOT / "src" / "perfcourse" / "checks" / "pallas.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert "time" not in imported


# --- the notebook ------------------------------------------------------------------------------
def grade_cells():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def test_grade_cells_and_points():
    assert {gid: c.metadata["nbgrader"]["points"] for gid, c in grade_cells().items()} == {
        "test_matmul_kernel": 3, "test_tiling": 3, "test_traffic": 2, "test_tolerance": 2}


def test_public_tests_need_no_course_code_and_hidden_tests_call_the_checks():
    for cell in grade_cells().values():
        public, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert "perfcourse" not in public
        assert "pallas_checks.check_" in hidden


def test_task_headings_precede_every_solution_cell():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    headings = [c.source for c in nb.cells if c.cell_type == "markdown" and "## Task " in c.source]
    assert [h.split("## ")[1].split(":")[0] for h in headings] == ["Task 1", "Task 2", "Task 3", "Task 4"]


def test_interpret_mode_is_chosen_by_the_backend():
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    assert 'INTERPRET = jax.default_backend() != "tpu"' in nb.cells[1].source
    calls = [c.source for c in nb.cells if c.cell_type == "code" and "pl.pallas_call(" in c.source]
    assert calls and all("interpret=INTERPRET" in source for source in calls)


# --- the artifact ------------------------------------------------------------------------------
def committed():
    return json.loads((ROOT / "artifacts" / "cpu" / f"{LESSON}.json").read_text())


def test_artifact_places_every_point_under_its_own_roof():
    stdout = committed()["stdout"]
    report = json.loads(stdout[stdout.index("{"):stdout.index("\n}\n") + 2])
    assert report["pallas"].startswith("interpreted") and report["backend"] == "cpu"
    assert report["clock"].startswith("latency")
    ceilings = report["ceilings"]
    ridge = ceilings["peak_flop_per_second"] / ceilings["peak_bytes_per_second"]
    assert ceilings["ridge_flop_per_byte"] == pytest.approx(ridge)
    kernels = [row for row in report["implementations"] if row["blocks"] and row["group"] == "float32 matmul"]
    assert [row["blocks"] for row in kernels] == [[16, 128, 128], [64, 256, 128], [128, 256, 256]]
    size = int(report["product"].split("x")[0])
    for row in report["implementations"]:
        assert row["agrees"] is True and row["clock"] == report["clock"]
        assert row["intensity"] == pytest.approx(row["flops"] / row["bytes"])
        assert row["bound"] == ("memory" if row["intensity"] < ridge else "compute")
        roof = min(ceilings["peak_flop_per_second"], row["intensity"] * ceilings["peak_bytes_per_second"])
        assert row["attainable"] == pytest.approx(roof)
        assert row["fraction"] == pytest.approx(row["flop_per_second"] / roof)
    for row in kernels:
        assert row["bytes"] == pallas.expected_traffic(size, size, size, *row["blocks"], 4)["bytes"]
    intensities = [row["intensity"] for row in kernels]
    assert intensities == sorted(intensities), "larger blocks, higher intensity"
    assert all(found["precision"] == numerics.FLOAT32 for found in report["precision"].values())
    groups = {row["name"]: row["group"] for row in report["implementations"]}
    assert {name for name, group in groups.items() if group != "float32 matmul"} == {
        "Pallas fused", "XLA, one jit", "XLA, two jits (unfused)"}
    steps = report["grid_step"]
    assert len(steps["runs"]) >= 5 and steps["seconds_per_step"] > 0
    # The fused kernel's VMEM budget: both buffers of its bfloat16 blocks and one float32 scratch block.
    fused = next(row for row in report["implementations"] if row["name"] == "Pallas fused")
    bm, bn, bk = fused["blocks"]
    assert fused["vmem_bytes"] == 2 * (bm * bk + bk * bn) * 2 + 2 * bm * bn * 2 + bm * bn * 4
    published = report["against_published_v5e"]  # not a TPU v5e: no fraction, no verdict on the goal
    assert published["goal_met"] is None and set(published["fraction"].values()) == {None}


def test_artifact_prints_its_table_from_the_run_and_the_text_types_no_figure():
    stdout = committed()["stdout"]
    assert "clock: latency (synchronized timer)" in stdout and "implementation" in stdout
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    measured = next(c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Measured"))
    # No measured time, rate or fraction typed in the text: only the published peak and bandwidth.
    assert not re.search(r"\d ?(ms|us|GFLOP/s)\b|\d%", measured), re.search(r"\d ?(ms|us|GFLOP/s)\b|\d%", measured)


def test_artifact_draws_a_log_log_roofline_and_a_diagram_with_alt_text():
    recorded = committed()
    roofline = recorded["data"]["panels"][0]
    assert roofline["xscale"] == roofline["yscale"] == "log"
    assert [s["style"] for s in roofline["series"]] == ["line", "points", "points"]
    assert recorded["diagram"]["alt"] and recorded["diagram"]["panel"]["kind"] == "flow"


def test_the_tpu_path_uses_mosaic_parameters_and_the_device_clock():
    # The TPU branch cannot run here; its spelling is checked: names both JAX versions have.
    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    source = next(c.source for c in nb.cells if "def device_seconds(" in c.source)
    for needed in ('getattr(pltpu, "CompilerParams", None) or getattr(pltpu, "TPUCompilerParams", None)',
                   "vmem_limit_bytes=", "dimension_semantics=", "pl.CostEstimate(", "scratch_shapes=",
                   "pltpu.VMEM(", '"XLA Modules"', "create_perfetto_trace=True"):
        assert needed in source, needed


def test_the_forger_that_sends_a_plain_dot_for_the_body_loses_it():
    # adversarial/performance-12/forged-plain-dot.py, judged in this process: its cell replaces the probe
    # dispatcher here (restored after), and the body's check must refuse what the forged probe sends.
    from perfcourse.kernel import probes
    entry = next(s for s in discover(ROOT, [LESSON], folder="adversarial", prefix="hostile")
                 if s.case == "forged-plain-dot")
    real = probes.run
    try:
        namespace = lesson_namespace(build(ROOT, entry))
        assert probes.run is not real, "the entry's forger is in place"
        with pytest.raises(CheckFailed, match="without the grid loop"):
            CHECKS["test_matmul_kernel"](namespace, 0)
    finally:
        probes.run = real
    with pytest.raises(CheckFailed, match="kept what they held"):  # and its own body, exported honestly
        CHECKS["test_matmul_kernel"](namespace, 0)


def test_the_tpu_recording_meets_the_roof_goal_and_its_claims():
    """Issue 50 on the chip: roofs by device time within 0.8 of the v5e's published 197 TFLOP/s and
    819 GB/s (and not above them), every point under the roof of its own intensity, the plain matmul
    reaching jnp.dot without beating it, and the fused kernel ahead of XLA where XLA does not fuse."""
    stdout = json.loads((ROOT / "artifacts" / "tpu" / f"{LESSON}.json").read_text())["stdout"]
    report = json.loads(stdout[stdout.index("{"):stdout.index("\n}\n") + 2])
    assert report["pallas"].startswith("compiled") and report["clock"].startswith("device time")
    ceilings = report["ceilings"]
    fractions = {"peak_flop_per_second": ceilings["peak_flop_per_second"] / 197e12,
                 "peak_bytes_per_second": ceilings["peak_bytes_per_second"] / 819e9}
    assert all(0.8 <= fraction <= 1.0 for fraction in fractions.values()), fractions
    if "against_published_v5e" in report:  # recorded after the report gave the fractions itself
        assert report["against_published_v5e"]["goal_met"] is True
        assert report["against_published_v5e"]["fraction"] == pytest.approx(fractions)
    ridge = ceilings["ridge_flop_per_byte"]
    rows = {row["name"]: row for row in report["implementations"]}
    for row in rows.values():
        assert row["agrees"] is True and row["bound"] == ("memory" if row["intensity"] < ridge else "compute")
    kernels = [row for row in rows.values() if row["group"] == "float32 matmul" and row["blocks"]]
    assert rows["Pallas 256x512x512"]["bound"] == "memory"  # not compute-bound, as the overhead's roofs said
    assert max(row["flop_per_second"] for row in kernels) <= rows["jnp.dot"]["flop_per_second"]
    assert rows["Pallas fused"]["seconds"] < rows["XLA, two jits (unfused)"]["seconds"]
