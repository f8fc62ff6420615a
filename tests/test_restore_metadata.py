"""Stripped nbgrader metadata given back before grading (grading/restore_metadata.py), on small notebooks.

The whole chain on a released lesson, against its gradebook, is in tests/test_bad_input.py; a
graded class with a stripped notebook in tests/test_grade_workflow.py.
"""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config

from conftest import ROOT

from perfcourse.grading.restore_metadata import RESTORED_KEY, RestoreStrippedMetadata, grade_id_of, restore

TEST = "assert answer() == 42\n### BEGIN HIDDEN TESTS\nassert answer.calls == 1\n### END HIDDEN TESTS"


def marked(cell, grade_id, **roles):
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "grade": False, "solution": False, "locked": False,
                                 "schema_version": 3, **roles}
    return cell


def lesson():
    """A lesson as its source notebook holds it: a solution, its test (with hidden tests), a locked helper."""
    return new_notebook(cells=[
        new_markdown_cell("Write `answer()`.", id="intro"),
        marked(new_code_cell("def answer():\n    return 42", id="answer-cell"), "answer", solution=True),
        marked(new_code_cell("HELPER = 1", id="helper-cell"), "helper", locked=True),
        marked(new_code_cell(TEST, id="test-cell"), "test_answer", grade=True, locked=True, points=2),
    ])


def submission(renumbered=False):
    """The student's notebook, every cell's nbgrader metadata stripped (ids renumbered too, if asked)."""
    cells = [new_markdown_cell("Write `answer()`.", id="intro"),
             new_code_cell("def answer():\n    return 6 * 7", id="answer-cell"),
             new_code_cell("HELPER = 1  ", id="helper-cell"),  # an editor's trailing spaces
             new_code_cell("assert answer() == 42\n", id="test-cell")]
    if renumbered:
        for number, cell in enumerate(cells):
            cell.id = f"cell-{number}"
    return new_notebook(cells=cells)


def roles(nb):
    return [grade_id_of(cell) for cell in nb.cells]


def test_by_cell_id_every_graded_cell_gets_its_metadata_back():
    nb = submission()
    record = restore(nb, lesson())
    assert roles(nb) == [None, "answer", "helper", "test_answer"]
    assert nb.cells[3].metadata["nbgrader"]["points"] == 2 and "checksum" not in nb.cells[3].metadata["nbgrader"]
    assert record == {"restored": {"answer": "id", "helper": "id", "test_answer": "id"}, "missing": []}
    assert nb.cells[1].source == "def answer():\n    return 6 * 7"  # the student's code, untouched


def test_new_ids_restore_test_and_locked_cells_by_their_text_never_a_solution():
    nb = submission(renumbered=True)
    record = restore(nb, lesson())
    assert roles(nb) == [None, None, "helper", "test_answer"]  # the hidden tests left out of the text compared
    assert record == {"restored": {"helper": "text", "test_answer": "text"}, "missing": ["answer"]}


def test_a_text_two_cells_share_is_no_match():
    nb = submission(renumbered=True)
    nb.cells.append(new_code_cell("assert answer() == 42", id="copy"))
    assert restore(nb, lesson())["missing"] == ["answer", "test_answer"]
    assert roles(nb) == [None, None, "helper", None, None]


def test_marked_cells_stay_as_they_are_and_an_intact_notebook_has_no_record():
    nb = submission()
    marked(nb.cells[3], "test_answer", grade=True, locked=True, points=2)
    nb.cells[1].id = "elsewhere"
    assert restore(nb, lesson()) == {"restored": {"helper": "id"}, "missing": ["answer"]}
    whole = lesson()
    assert restore(whole, lesson()) == {}


def test_the_record_is_the_graders_alone(tmp_path):
    """The step reads the lesson's source notebook through nbgrader's course folders; a record a
    submission brings is dropped, with or without a lesson to restore from."""
    folder = tmp_path / "source" / "lesson"
    folder.mkdir(parents=True)
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    resources = {"nbgrader": {"assignment": "lesson", "notebook": "lesson"}}
    forged = {"restored": {"test_answer": "id"}, "missing": []}
    nb = submission()
    nb.metadata[RESTORED_KEY] = forged
    nb, _ = RestoreStrippedMetadata(config=config).preprocess(nb, resources)
    assert RESTORED_KEY not in nb.metadata and roles(nb) == [None] * 4  # no lesson: nothing restored
    nbformat.write(lesson(), folder / "lesson.ipynb")
    nb = lesson()
    nb.metadata[RESTORED_KEY] = forged
    nb, _ = RestoreStrippedMetadata(config=config).preprocess(nb, resources)
    assert RESTORED_KEY not in nb.metadata
    nb, _ = RestoreStrippedMetadata(config=config).preprocess(submission(), resources)
    assert nb.metadata[RESTORED_KEY]["restored"] == {"answer": "id", "helper": "id", "test_answer": "id"}


def test_every_lessons_source_holds_the_ids_and_texts_its_release_gave_students():
    """Restoring reads the source notebook (it is where grading runs, on a cluster's workers too):
    that holds only if the release keeps each graded cell's id and shows its text, hidden tests aside."""
    from perfcourse.course import lessons, read_notebook

    for name in lessons(ROOT):
        source = read_notebook(ROOT / "source" / name / f"{name}.ipynb")
        released = read_notebook(ROOT / "release" / name / f"{name}.ipynb")
        stripped = nbformat.from_dict(released)
        for cell in stripped.cells:
            cell.metadata.pop("nbgrader", None)
        record = restore(stripped, source)
        assert not record["missing"] and set(record["restored"].values()) == {"id"}, name
        assert roles(stripped) == roles(released), name
        renumbered = nbformat.from_dict(released)
        for number, cell in enumerate(renumbered.cells):
            cell.metadata.pop("nbgrader", None)
            cell.id = f"pasted-{number}"
        record = restore(renumbered, source)
        texts = [grade_id_of(c) for c in released.cells if grade_id_of(c) and (
            c.metadata["nbgrader"].get("grade") or c.metadata["nbgrader"].get("locked"))]
        assert sorted(record["restored"]) == sorted(texts), name
