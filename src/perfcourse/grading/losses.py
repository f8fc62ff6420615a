"""Where points go silently: what a graded notebook lost against its release, in words.

nbgrader grades what it can and says nothing of what a student removed: a deleted solution cell
costs its task's points, a deleted test cell is put back, a notebook whose nbgrader metadata an
editor stripped is given it back before grading (grading/restore_metadata.py) or, where none of
it could be, scores what its test cells earn when put back at the top. Each becomes a note here,
read from the graded notebook (the cells nbgrader marked as put back, the solution cells it no
longer marks, the restoring step's record) against the lesson's release notebook; the score stays
what grading gave. A notebook whose metadata was restored gets one note, naming the cells
restored and those that could not be, and why. A submission folder that is no lesson of the
course (`submitted/S/performance-99/`) is named by the survey (grading/run.py) and in the
student's feedback (grading/loss_notes.py).

The notes reach the grade table, grades.csv and `perfcourse report`; the student's feedback gets
them from grading/loss_notes.py's preprocessor (grader_config.py lists it).
"""
from __future__ import annotations

import os
import re

from .restore_metadata import RESTORED_KEY
from .scratch import shown

# nbgrader's OverwriteCells.missing_cell_notification, which opens each cell it puts back ("# "
# before it in a code cell).
_PUT_BACK = re.compile(r"^(?:# )?This cell \(id:(?P<grade_id>[^)\s]+)\) was missing from the submission\.")


def _marked_cells(nb) -> dict:
    """{grade_id: cell} of the notebook's cells nbgrader marks (the last, where two share a grade id)."""
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if isinstance(c.metadata.get("nbgrader"), dict) and c.metadata["nbgrader"].get("grade_id")}


def _marked(nb) -> dict[str, dict]:
    return {name: cell.metadata["nbgrader"] for name, cell in _marked_cells(nb).items()}


def _restoring(graded) -> tuple[dict[str, str], list[str]]:
    """The restoring step's record in a graded notebook: {grade_id: "id" or "text"}, and the grade
    ids it found in no cell. The grader wrote it, but it is read back with care all the same."""
    record = graded.metadata.get(RESTORED_KEY)
    record = record if isinstance(record, dict) else {}
    restored, missing = record.get("restored"), record.get("missing")
    restored = {k: v for k, v in restored.items() if isinstance(k, str) and v in ("id", "text")} \
        if isinstance(restored, dict) else {}
    missing = [name for name in missing if isinstance(name, str)] if isinstance(missing, list) else []
    return restored, missing


def lost_cells(graded, released) -> list[str]:
    """One note per cell the student's notebook lost against the release (stripped metadata: one
    note for the notebook); none for a notebook that kept every cell."""
    wanted = _marked(released)
    cell_ids = {name: cell.get("id") for name, cell in _marked_cells(released).items()}  # grade id: cell id
    solutions = [name for name, meta in wanted.items() if meta.get("solution") and not meta.get("grade")]
    tests = [name for name, meta in wanted.items() if meta.get("grade")]
    put_back = [m["grade_id"] for c in graded.cells if (m := _PUT_BACK.match(c.source or ""))]
    kept = _marked(graded)
    gone = [name for name in solutions if name not in kept]
    restored, missing = _restoring(graded)
    if restored:
        return [_restored_note(restored, [name for name in missing if name in wanted], solutions, tests, cell_ids)]
    ids = {c.get("id") for c in graded.cells}
    if tests and set(tests) <= set(put_back) and solutions and len(gone) == len(solutions):
        return [f"nbgrader metadata stripped: none of the notebook's {len(solutions) + len(tests)} graded cells "
                "was marked any more, nor could be recognised by its cell id or its text, so nbgrader put every "
                "test cell back from the release, apart from the student's code (which ran as ordinary cells): "
                "restore the metadata (fetch the lesson again and copy the code into its cells)"]
    notes = []
    for number, name in enumerate(solutions, 1):
        if name in gone:
            stripped = cell_ids.get(name) is not None and cell_ids[name] in ids
            how = "its nbgrader metadata was stripped" if stripped else "it was deleted"
            notes.append(f"solution cell {name} (task {number}) lost: {how}, so the tests that use its code "
                         "lose their points")
    for name in tests:
        if name in put_back:
            notes.append(f"test cell {name} was missing: nbgrader put it back from the release and graded it")
    return notes


def _restored_note(restored: dict[str, str], missing: list[str], solutions: list[str], tests: list[str],
                   cell_ids: dict[str, str | None]) -> str:
    """The one note of a notebook whose stripped metadata was given back: which cells, how, and
    which could not be, with why (`cell_ids`: the release's cell id of each grade id)."""
    by_id = [name for name, how in restored.items() if how == "id"]
    by_text = [name for name, how in restored.items() if how == "text"]
    ways = ([f"by cell id ({', '.join(by_id)})"] if by_id else []) + \
        ([f"by their unchanged text ({', '.join(by_text)})"] if by_text else [])
    note = (f"nbgrader metadata restored: {len(restored)} of the lesson's solution, test and locked cells had lost "
            "theirs (an editor or a tool strips it, copying cells into a new notebook drops it) and got it back from "
            f"the release, {' and '.join(ways)}, so they were graded as usual")
    if not missing:
        return note
    def named(names: list[str], task: bool = False) -> str:
        return ", ".join(f"{name} ({f'task {solutions.index(name) + 1}, ' if task else ''}cell id {cell_ids.get(name)})"
                         for name in names)

    lost = []
    if gone := [name for name in missing if name in solutions]:
        lost.append(f"solution cell(s) {named(gone, task=True)}, for no cell holds that id: where their code is "
                    "still in the notebook it ran in place as ordinary cells and the tests read it as usual, where "
                    "it is gone those tests lose their points")
    if put := [name for name in missing if name in tests]:
        lost.append(f"test cell(s) {named(put)}, for no cell holds that id or their text: nbgrader put them back "
                    "from the release and graded them")
    if locked := [name for name in missing if name not in solutions and name not in tests]:
        lost.append(f"locked cell(s) {named(locked)}, for no cell holds that id or their text: where the notebook "
                    "still holds them they ran as ordinary cells, where they are gone the tests that need them "
                    "lose their points")
    return f"{note}; not restored: {'; '.join(lost)}"


def stray_note(student: str, folder: str, known: list[str]) -> str:
    """What grading says of a folder in a student's submission folder that is no lesson."""
    return (f"submitted/{shown(student)}/{shown(folder)}/ is no lesson of the course, so it was not graded "
            f"(the lessons: {', '.join(known)})")


def stray_notes(submitted, known: list[str]) -> list[str]:
    """stray_note for every student's folder in `submitted` that is no lesson. Nothing is followed."""
    if not os.path.isdir(submitted):
        return []
    found = []
    with os.scandir(submitted) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                found += [stray_note(entry.name, stray, known) for stray in stray_lessons(entry.path, known)]
    return found


def stray_lessons(student_folder, known: list[str]) -> list[str]:
    """Folders in a student's submission folder that are no lesson of the course (a renamed or
    misspelled lesson): never graded, so each is named."""
    found = []
    with os.scandir(student_folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name not in known and not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                found.append(entry.name)
    return found
