"""Give a submission's graded cells back the nbgrader metadata an editor or a tool stripped.

nbgrader knows a notebook's solution, test and locked cells only by their `nbgrader` metadata.
A tool that drops cell metadata, or cells copied into a new notebook, leave every cell unmarked:
nbgrader then puts each test cell back from the gradebook at the top of the notebook, before any
of the student's code has run (NameErrors, 0 points), and the student's copies of the tests run
as ordinary cells. `RestoreStrippedMetadata` runs before the course's other sanitize steps
(grader_config.py) and gives each unmarked cell its metadata back from the lesson's source
notebook, which holds the same cell ids as the release the student was given:

- **by cell id** (nbformat 4.5): a cell holding the id of a graded cell of the lesson gets that
  cell's metadata, as if it had never lost it, whatever its type (nbgrader then restores the type);
- **by unchanged text**, for test and locked cells only: where the ids changed too (a tool that
  renumbers them, cells pasted into a new notebook), a cell whose text is exactly what the release
  showed of one such cell (its hidden tests left out), when no other unmarked cell and no other
  missing cell shares that text. This is safe because nbgrader overwrites these cells with the
  gradebook's text anyway: the match decides where the tests run, never what runs in them.

Solution cells are matched by id only. Their text is the student's own, so there is nothing to
match, and a guess by position could give a student's scratch cell the role. Nothing rests on it:
a solution cell's code runs in the student's kernel, in its place, marked or not, and the tests
read it there. A lesson cell left unrestored is named in the notebook's record, `RESTORED_KEY` in
its metadata (set here alone: a submission's own is dropped first), which grading/losses.py turns
into the one note the report and the feedback show.
"""
from __future__ import annotations

import copy

from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor

from .nbgrader_folders import read_lesson_notebook

RESTORED_KEY = "perfcourse_restored"


class RestoreStrippedMetadata(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        nb.metadata.pop(RESTORED_KEY, None)  # the grader's record alone, never one a student wrote
        lesson = read_lesson_notebook(self.config, resources, "source")
        if lesson is None:
            return nb, resources  # no lesson to restore from: nbgrader grades what it finds
        record = restore(nb, lesson, ClearHiddenTests(config=self.config))
        if record.get("restored"):  # a notebook that only lost cells is told by losses.py as before
            self.log.warning("Restored stripped nbgrader metadata: %s", record)
            nb.metadata[RESTORED_KEY] = record
        return nb, resources


def grade_id_of(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader")
    grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
    return grade_id if isinstance(grade_id, str) and grade_id else None


def restore(nb, lesson, hidden_tests: ClearHiddenTests | None = None) -> dict:
    """Give `nb`'s unmarked cells the metadata of the lesson's graded cells they are, in place.

    Returns the record (empty where the notebook lacked no graded cell of the lesson):
    `restored`, {grade_id: "id" or "text"}, how each cell was recognised; `missing`, the grade ids
    of the lesson's graded cells that no cell of `nb` holds, even now."""
    hidden_tests = hidden_tests or ClearHiddenTests()
    wanted = [cell for cell in lesson.cells if grade_id_of(cell)]
    known = {grade_id_of(cell) for cell in wanted}
    present = {grade_id_of(cell) for cell in nb.cells} & known
    missing = [cell for cell in wanted if grade_id_of(cell) not in present]
    if not missing:
        return {}
    unmarked = [cell for cell in nb.cells if grade_id_of(cell) not in known]
    restored: dict[str, str] = {}

    def give(cell, reference, how: str) -> None:
        cell.metadata["nbgrader"] = copy.deepcopy(reference.metadata["nbgrader"])
        cell.metadata["nbgrader"].pop("checksum", None)  # nbgrader sets the gradebook's
        unmarked.remove(cell)
        restored[grade_id_of(reference)] = how

    # nbgrader turns a restored cell into its type; a raw cell it cannot turn into a code cell.
    by_id = {cell.get("id"): cell for cell in unmarked if cell.get("id") and cell.cell_type != "raw"}
    for reference in missing:
        cell = by_id.get(reference.get("id"))
        if cell is not None and reference.get("id"):
            give(cell, reference, "id")
    left = [cell for cell in missing if grade_id_of(cell) not in restored]
    shown = {grade_id_of(cell): _text(_visible(cell, hidden_tests)) for cell in left if _by_text(cell)}
    for reference in left:
        text = shown.get(grade_id_of(reference))
        if not text or list(shown.values()).count(text) != 1:
            continue
        matches = [cell for cell in unmarked if cell.cell_type == reference.cell_type and _text(cell) == text]
        if len(matches) == 1:
            give(matches[0], reference, "text")
    return {"restored": restored, "missing": [grade_id_of(cell) for cell in missing
                                              if grade_id_of(cell) not in restored]}


def _by_text(cell) -> bool:
    """A test or locked cell, whose text nbgrader overwrites: never a cell that holds a student's answer."""
    meta = cell.metadata["nbgrader"]
    return bool(meta.get("grade") or meta.get("locked")) and not meta.get("solution")


def _visible(cell, hidden_tests: ClearHiddenTests):
    """The cell as the release shows it: its hidden tests left out."""
    shown = copy.deepcopy(cell)
    hidden_tests._remove_hidden_test_region(shown)
    return shown


def _text(cell) -> str:
    """A cell's text, trailing spaces of each line and blank lines at either end aside (editors trim them)."""
    source = cell.get("source", "")
    source = source if isinstance(source, str) else "".join(source)
    return "\n".join(line.rstrip() for line in source.splitlines()).strip("\n")
