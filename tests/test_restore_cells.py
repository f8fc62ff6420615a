"""A grade cell a student deleted is put back where the instructor had it, in every lesson.

nbgrader's own OverwriteCells aborts the notebook when the cell before a deleted grade cell is a
locked helper cell; the course's RestoreDeletedCells (grading/sanitize.py) does not. This runs it,
as autograde does, against the gradebook that generate_assignment filled, on each lesson's release
with every grade cell deleted.
"""
import nbformat
import pytest

from conftest import ROOT, copy_course

from perfcourse import nbgrader_bridge, release
from perfcourse.course import lessons
from perfcourse.grading.sanitize import RestoreDeletedCells

pytestmark = pytest.mark.e2e  # nbgrader's generate_assignment for every lesson


def grade_ids(nb):
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")]


def test_deleted_grade_cells_come_back_in_the_instructors_order(tmp_path):
    root = copy_course(tmp_path / "course")
    release.generate(root)
    for lesson in lessons(root):
        released = nbformat.read(release.released(root, lesson), as_version=4)
        deleted = nbformat.from_dict(released)
        deleted.cells = [c for c in deleted.cells if not c.metadata.get("nbgrader", {}).get("grade")]
        resources = {"nbgrader": {"notebook": lesson, "assignment": lesson, "db_url": nbgrader_bridge.db_url(root)}}
        restored, _ = RestoreDeletedCells(config=nbgrader_bridge.config(root)).preprocess(deleted, resources)
        assert grade_ids(restored) == grade_ids(released), lesson
        public = [c.source.split("### BEGIN HIDDEN TESTS")[0].strip()  # restored with its hidden tests
                  for c in restored.cells if c.metadata.get("nbgrader", {}).get("grade")]
        given = [c.source.strip() for c in released.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert len(public) == len(given) and all(p.endswith(g) for p, g in zip(public, given)), lesson
        assert all("was added back by nbgrader" in p for p in public)  # nbgrader says so in the cell


def test_autograde_restores_through_the_course_preprocessor():
    steps = list(nbgrader_bridge.config(ROOT).Autograde.sanitize_preprocessors)
    assert "perfcourse.grading.sanitize.RestoreDeletedCells" in steps
    assert "nbgrader.preprocessors.OverwriteCells" not in steps
