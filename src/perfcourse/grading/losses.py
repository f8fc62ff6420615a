"""Where points go silently: what a graded notebook lost against its release, in words.

nbgrader grades what it can and says nothing of what a student removed: a notebook whose nbgrader
metadata an editor stripped scores 0 (the grade cells come back from the gradebook, apart from
the student's code, which ran as ordinary cells: NameErrors), a deleted solution cell costs its
task's points, a deleted test cell is put back. Each becomes one note here, read from the graded
notebook (the cells nbgrader marked as put back, the solution cells it no longer marks) against
the lesson's release notebook; the score stays what grading gave. A submission folder that is no
lesson of the course (`submitted/S/performance-99/`) is named by the survey (grading/run.py).

The notes reach the grade table, grades.csv and `perfcourse report`; the student's feedback gets
them from grading/loss_notes.py's preprocessor once grader_config.py lists it (HOOK, issue 52).
"""
from __future__ import annotations

import re

# nbgrader's OverwriteCells.missing_cell_notification, which opens each cell it puts back ("# "
# before it in a code cell).
_PUT_BACK = re.compile(r"^(?:# )?This cell \(id:(?P<grade_id>[^)\s]+)\) was missing from the submission\.")


def _marked(nb) -> dict[str, dict]:
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"] for c in nb.cells
            if isinstance(c.metadata.get("nbgrader"), dict) and c.metadata["nbgrader"].get("grade_id")}


def lost_cells(graded, released) -> list[str]:
    """One note per cell the student's notebook lost against the release (stripped metadata: one
    note for the notebook); none for a notebook that kept every cell."""
    wanted = _marked(released)
    solutions = [name for name, meta in wanted.items() if meta.get("solution") and not meta.get("grade")]
    tests = [name for name, meta in wanted.items() if meta.get("grade")]
    put_back = [m["grade_id"] for c in graded.cells if (m := _PUT_BACK.match(c.source or ""))]
    kept = _marked(graded)
    gone = [name for name in solutions if name not in kept]
    ids = {c.get("id") for c in graded.cells}
    by_id = {c.metadata["nbgrader"]["grade_id"]: c.get("id") for c in released.cells
             if isinstance(c.metadata.get("nbgrader"), dict) and c.metadata["nbgrader"].get("grade_id")}
    if tests and set(tests) <= set(put_back) and solutions and len(gone) == len(solutions):
        return [f"nbgrader metadata stripped: none of the notebook's {len(solutions) + len(tests)} graded cells "
                "was marked any more, so nbgrader put every test cell back from the release, apart from the "
                "student's code (which ran as ordinary cells): restore the metadata (fetch the lesson again and "
                "copy the code into its cells)"]
    notes = []
    for number, name in enumerate(solutions, 1):
        if name in gone:
            stripped = by_id.get(name) is not None and by_id[name] in ids
            how = "its nbgrader metadata was stripped" if stripped else "it was deleted"
            notes.append(f"solution cell {name} (task {number}) lost: {how}, so the tests that use its code "
                         "lose their points")
    for name in tests:
        if name in put_back:
            notes.append(f"test cell {name} was missing: nbgrader put it back from the release and graded it")
    return notes


def stray_lessons(student_folder, known: list[str]) -> list[str]:
    """Folders in a student's submission folder that are no lesson of the course (a renamed or
    misspelled lesson): never graded, so each is named."""
    import os

    found = []
    with os.scandir(student_folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name not in known and not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                found.append(entry.name)
    return found
