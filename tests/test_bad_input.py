"""Bad input: one clear line naming what is wrong, a non-zero exit, nothing half-written."""
import json
import subprocess

import pytest


@pytest.fixture
def perfcourse(monkeypatch, capsys):
    """`perfcourse ARGS` run in this process (no interpreter start per call), as a CompletedProcess."""
    from perfcourse.cli import main

    def run(*args, cwd):
        monkeypatch.chdir(cwd)
        try:
            status = main(list(args))
        except SystemExit as exc:
            status = exc.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, status, out, err)
    return run


def one_error_line(proc):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("perfcourse: error: "), proc.stderr
    return lines[0]


def test_unknown_lesson(course, perfcourse):
    line = one_error_line(perfcourse("artifacts", "--lesson", "performance-99", cwd=course))
    assert "unknown lesson 'performance-99'" in line and "performance-01" in line


def test_unknown_kernel_writes_nothing(course, perfcourse):
    before = (course / "artifacts" / "cpu" / "performance-01.json").read_bytes()
    line = one_error_line(perfcourse("artifacts", "--kernel", "jax-nowhere", cwd=course))
    assert "unknown kernel 'jax-nowhere'" in line
    assert (course / "artifacts" / "cpu" / "performance-01.json").read_bytes() == before


def test_corrupt_source_notebook_writes_nothing(course, perfcourse):
    path = course / "source" / "performance-01" / "performance-01.ipynb"
    path.write_text(path.read_text()[:500])
    before = (course / "artifacts" / "cpu" / "performance-01.json").read_bytes()
    for args in (("artifacts",), ("release",), ("artifacts", "--check")):
        line = one_error_line(perfcourse(*args, cwd=course))
        assert "source/performance-01/performance-01.ipynb: not a notebook" in line
    assert (course / "artifacts" / "cpu" / "performance-01.json").read_bytes() == before
    assert not list((course / "artifacts" / "cpu").glob(".*tmp"))


def test_invalid_notebook_structure(course, perfcourse):
    path = course / "source" / "performance-01" / "performance-01.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][0]["cell_type"] = "diagram"
    path.write_text(json.dumps(nb))
    line = one_error_line(perfcourse("release", cwd=course))
    assert "performance-01.ipynb: invalid notebook" in line


def test_outside_the_course(tmp_path, perfcourse):
    line = one_error_line(perfcourse("grade", cwd=tmp_path))
    assert "not inside the course" in line


def test_a_notebook_of_the_wrong_shape_is_named_in_a_notebooks_words(tmp_path):
    from perfcourse.course import CourseError, read_notebook

    path = tmp_path / "x.ipynb"
    for text, said in (('{"cells": 5, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
                        'its "cells" is a number, where it must be a list'),
                       ('[1, 2]', "the file holds a list, where a notebook is a JSON object"),
                       ('{"cells": ["x"], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
                        "its cell 1 is a string, where a cell is a JSON object")):
        path.write_text(text)
        with pytest.raises(CourseError) as raised:
            read_notebook(path)
        assert str(raised.value) == f"{path}: not a notebook ({said})"


@pytest.fixture(scope="module")
def released_01(tmp_path_factory):
    """A scratch course with performance-01 released (its gradebook records the cells), and its release."""
    import shutil

    from conftest import ROOT

    from perfcourse import release
    from perfcourse.course import CONFIG_FILES, copy_course, read_notebook

    root = copy_course(ROOT, tmp_path_factory.mktemp("losses") / "course", CONFIG_FILES + ("source", "release"))
    for folder in ("source", "release"):
        for path in (root / folder).iterdir():
            if path.name != "performance-01":
                shutil.rmtree(path)
    release.generate(root, ["performance-01"])
    return root, read_notebook(release.released(root, "performance-01"))


def _graded_as_nbgrader_would(root, nb):
    """The grader's own cell restoring steps (grader_config.py's sanitize preprocessors), no kernel."""
    from perfcourse.grading.restore_metadata import RestoreStrippedMetadata
    from perfcourse.grading.sanitize import RestoreCellRoles, RestoreDeletedCells
    from perfcourse.nbgrader_bridge import config, db_url

    resources = {"nbgrader": {"db_url": db_url(root), "assignment": "performance-01", "notebook": "performance-01"}}
    loaded = config(root)
    for step in (RestoreStrippedMetadata(config=loaded), RestoreCellRoles(config=loaded),
                 RestoreDeletedCells(config=loaded)):
        nb, resources = step.preprocess(nb, resources)
    return nb


def _stripped(nb, renumbered=False):
    """`nb` with every cell's nbgrader metadata dropped (and, renumbered, its cell ids replaced, as a
    tool that renumbers them or cells pasted into a new notebook would)."""
    import copy

    nb = copy.deepcopy(nb)
    for number, cell in enumerate(nb.cells):
        cell.metadata.pop("nbgrader", None)
        if renumbered:
            cell.id = f"pasted-{number}"
    return nb


def _grade_ids(nb):
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")]


@pytest.mark.slow  # the fixture releases a lesson (about a second)
def test_each_silent_loss_of_points_is_one_note(released_01):
    import copy

    from perfcourse.grading.losses import lost_cells

    root, released = released_01
    assert lost_cells(_graded_as_nbgrader_would(root, copy.deepcopy(released)), released) == []
    marked = [c.metadata["nbgrader"] for c in released.cells if "nbgrader" in c.metadata]
    solution = next(m["grade_id"] for m in marked if m.get("solution"))
    test = next(m["grade_id"] for m in marked if m.get("grade"))
    deleted = copy.deepcopy(released)
    deleted.cells = [c for c in deleted.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in (solution, test)]
    assert lost_cells(_graded_as_nbgrader_would(root, deleted), released) == [
        f"solution cell {solution} (task 1) lost: it was deleted, so the tests that use its code lose their points",
        f"test cell {test} was missing: nbgrader put it back from the release and graded it"]


@pytest.mark.slow  # the fixture releases a lesson (about a second)
def test_stripped_metadata_is_restored_before_the_tests_are_put_back(released_01):
    """Every graded cell gets its metadata back by cell id: the notebook nbgrader grades is the one it
    would have graded had nothing been stripped, and one note says so."""
    import copy

    from perfcourse.grading.losses import lost_cells

    root, released = released_01
    whole = _graded_as_nbgrader_would(root, copy.deepcopy(released))
    restored = _graded_as_nbgrader_would(root, _stripped(released))
    assert [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in restored.cells] == \
        [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in whole.cells]
    [note] = lost_cells(restored, released)
    assert note.startswith("nbgrader metadata restored: 9 of the lesson's solution, test and locked cells")
    assert "by cell id (workload, " in note
    assert "not restored" not in note


@pytest.mark.slow  # the fixture releases a lesson (about a second)
def test_stripped_metadata_and_new_cell_ids_restore_the_tests_by_their_text(released_01):
    """Cell ids renumbered too: the test and locked cells are recognised by their text and stay in
    place (none put back at the top); the solution cells stay ordinary cells where they are, named
    in the one note with why."""
    import copy

    from perfcourse.grading.losses import lost_cells

    root, released = released_01
    whole = _graded_as_nbgrader_would(root, copy.deepcopy(released))
    restored = _graded_as_nbgrader_would(root, _stripped(released, renumbered=True))
    solutions = [c.metadata["nbgrader"]["grade_id"] for c in released.cells
                 if c.metadata.get("nbgrader", {}).get("solution")]
    assert _grade_ids(restored) == [name for name in _grade_ids(whole) if name not in solutions]
    assert [c.source for c in restored.cells] == [c.source for c in whole.cells]  # no test put back at the top
    [note] = lost_cells(restored, released)
    assert "by their unchanged text (test_workload, " in note and "by cell id" not in note
    assert "not restored: solution cell(s) workload (task 1, cell id cell-05), timer (task 2, " in note
    edited = _stripped(released, renumbered=True)
    for cell in edited.cells:
        cell.source += "\n# mine"  # nothing left to recognise a cell by: every test put back, one note says so
    [note] = lost_cells(_graded_as_nbgrader_would(root, edited), released)
    assert note.startswith("nbgrader metadata stripped: none of the notebook's 7 graded cells was marked any more, "
                           "nor could be recognised by its cell id or its text")


@pytest.mark.slow  # the fixture releases a lesson (about a second)
def test_feedback_opens_with_what_the_notebook_lost(released_01, monkeypatch):
    """The feedback preprocessor (grading/loss_notes.py), as nbgrader's generate_feedback runs it in the
    course root: one markdown cell first where the notebook lost cells, none where it lost nothing."""
    import copy

    from perfcourse.grading.loss_notes import CELL_ID, LossNotes
    from perfcourse.nbgrader_bridge import config

    root, released = released_01
    monkeypatch.chdir(root)
    resources = {"nbgrader": {"assignment": "performance-01", "notebook": "performance-01"}}
    whole, _ = LossNotes(config=config(root)).preprocess(_graded_as_nbgrader_would(root, copy.deepcopy(released)),
                                                         dict(resources))
    assert all(cell.get("id") != CELL_ID for cell in whole.cells)
    noted, _ = LossNotes(config=config(root)).preprocess(_graded_as_nbgrader_would(root, _stripped(released)),
                                                         dict(resources))
    assert noted.cells[0].id == CELL_ID and "- nbgrader metadata restored" in noted.cells[0].source
    deleted = copy.deepcopy(released)
    deleted.cells = [c for c in deleted.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in ("timer",
                                                                                                     "test_queued")]
    noted, _ = LossNotes(config=config(root)).preprocess(_graded_as_nbgrader_would(root, deleted), dict(resources))
    assert [line for line in noted.cells[0].source.splitlines() if line.startswith("- ")] == [
        "- solution cell timer (task 2) lost: it was deleted, so the tests that use its code lose their points",
        "- test cell test\\_queued was missing: nbgrader put it back from the release and graded it"]


def test_a_stray_lesson_folder_is_named_not_skipped(tmp_path):
    import nbformat
    from conftest import ROOT

    from perfcourse.course import CONFIG_FILES, copy_course
    from perfcourse.grading import run
    from perfcourse.grading.loss_notes import CELL_ID, LossNotes, markdown_text
    from perfcourse.nbgrader_bridge import config

    root = copy_course(ROOT, tmp_path / "course", CONFIG_FILES + ("source",))
    (root / "submitted" / "S" / "performance-99").mkdir(parents=True)
    (root / "submitted" / "S" / "performance-01").mkdir(parents=True)
    gradable, refused = run.survey(root, ["performance-01"])
    assert [(o.student, o.lesson) for o in refused] == [("S", "performance-99"), ("S", "performance-01")]
    assert "submitted/S/performance-99/ is no lesson of the course" in refused[0].error

    # The student's feedback of any lesson names it too (grading/loss_notes.py, in generate_feedback).
    resources = {"nbgrader": {"assignment": "performance-01", "notebook": "performance-01", "student": "S"}}
    feedback, _ = LossNotes(config=config(root)).preprocess(nbformat.v4.new_notebook(), resources)
    [cell] = feedback.cells
    assert cell.id == CELL_ID and cell.source.endswith("\n- " + markdown_text(refused[0].error))
