"""source/ is output-free and valid; release/ is what nbgrader generates from it, and stays so."""
import json
import shutil

import nbformat
import pytest

from conftest import ROOT, perfcourse

from perfcourse.course import lessons

LESSONS = lessons(ROOT)


@pytest.mark.parametrize("lesson", LESSONS)
def test_source_notebooks_are_valid_and_output_free(lesson):
    nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    graded = [c for c in code if c.metadata.get("nbgrader", {}).get("grade")]
    assert any("### BEGIN HIDDEN TESTS" in c.source for c in graded), "every lesson has hidden tests"


@pytest.mark.parametrize("lesson", LESSONS)
def test_release_has_no_solutions_or_hidden_tests(lesson):
    text = (ROOT / "release" / lesson / f"{lesson}.ipynb").read_text()
    nbformat.validate(nbformat.reads(text, as_version=4))
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "perfcourse.checks"):
        assert marker not in text


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_unfilled_solution_cell_names_its_task(lesson):
    nb = nbformat.read(ROOT / "release" / lesson / f"{lesson}.ipynb", as_version=4)
    solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert solutions
    for number, cell in enumerate(solutions, 1):
        assert "raise NotImplementedError()" not in cell.source, cell.source
        assert f"raise NotImplementedError('Task {number} (" in cell.source, cell.source


@pytest.mark.e2e
def test_release_is_up_to_date():
    proc = perfcourse("release", "--check", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "release: up to date" in proc.stdout


@pytest.mark.e2e
def test_a_stale_release_is_named(course):
    path = course / "source" / "performance-01" / "performance-01.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][0]["source"] = ["# performance-01, edited after the release\n"]
    path.write_text(json.dumps(nb))
    proc = perfcourse("release", "--check", "--lesson", "performance-01", cwd=course)
    assert proc.returncode == 1
    assert "release/performance-01/performance-01.ipynb: stale against source/" in proc.stdout


@pytest.mark.e2e
@pytest.mark.nightly  # about a minute on 2 cores; the graded demo grades performance-01's release (0 points)
def test_validate_invert_finds_no_test_cell_that_an_unfilled_release_passes(tmp_path):
    """`nbgrader validate --invert` on each release notebook: every test cell fails before the work is
    done (a cell that passes would make JupyterLab's Validate say "Success" for unfinished work)."""
    from nbgrader.validator import Validator

    validator = Validator(invert=True)
    for lesson in LESSONS:
        folder = shutil.copytree(ROOT / "release" / lesson, tmp_path / lesson)
        results = validator.validate(str(folder / f"{lesson}.ipynb"))
        assert not results, f"{lesson}: {results}"
