"""Put back the instructor's cell roles before nbgrader's OverwriteCells runs.

OverwriteCells restores a grade cell's source, points and lock, but not whether it is a grade
cell at all: a student who unticks "grade" on a test cell makes nbgrader abort the whole
notebook ("Inconsistent checksums"). This preprocessor sets every cell's nbgrader role (grade,
solution, locked, points) from the gradebook's record of its grade id, and strips nbgrader
metadata a student invented for a cell the gradebook does not know.
"""
from __future__ import annotations

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor


class RestoreCellRoles(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            for cell in nb.cells:
                self._restore(cell, gradebook, info["notebook"], info["assignment"])
        return nb, resources

    def _restore(self, cell, gradebook, notebook, assignment) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            return
        grade_id = meta.get("grade_id")
        try:
            source = gradebook.find_source_cell(grade_id, notebook, assignment)
        except MissingEntry:
            del cell.metadata["nbgrader"]
            return

        def find(kind):
            try:
                return kind(grade_id, notebook, assignment)
            except MissingEntry:
                return None

        graded = find(gradebook.find_graded_cell)
        restored = {
            "grade": graded is not None,
            "grade_id": grade_id,
            "locked": bool(source.locked),
            "schema_version": 3,
            "solution": find(gradebook.find_solution_cell) is not None,
            "task": False,
        }
        if graded is not None:
            restored["points"] = float(graded.max_score)
        for key in ("checksum",):
            if key in meta:
                restored[key] = meta[key]
        cell.metadata["nbgrader"] = restored
