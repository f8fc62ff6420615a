"""Feedback's note of what a notebook lost against its release (grading/losses.py), for the student.

`LossNotes` is an nbgrader preprocessor for generate_feedback: it puts one markdown cell first
in the feedback, listing each loss (stripped metadata, restored or not, a deleted solution or test
cell) and each folder of the student's submission that is no lesson (never graded), where there
is any. grader_config.py lists it in c.GenerateFeedback.preprocessors, after
nbgrader's GetGrades.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from ..course import lessons
from .losses import lost_cells, stray_lessons, stray_note
from .nbgrader_folders import read_lesson_notebook

CELL_ID = "perfcourse-lost-cells"


class LossNotes(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        # None where there is no release to compare with: nothing can be said of the cells
        released = read_lesson_notebook(self.config, resources, "release")
        notes = (lost_cells(nb, released) if released is not None else []) + self._strays(resources)
        if notes:
            cell = nbformat.v4.new_markdown_cell(
                "**What grading noticed outside your code** (the grade above already counts it):\n\n"
                + "\n".join(f"- {markdown_text(note)}" for note in notes))
            cell.id = CELL_ID
            nb.cells.insert(0, cell)
        return nb, resources

    def _strays(self, resources) -> list[str]:
        """The student's submission folders that are no lesson: never graded, so named in every feedback."""
        student = resources.get("nbgrader", {}).get("student")
        if not student:
            return []
        directory = CourseDirectory(config=self.config)
        folder = Path(directory.format_path(directory.submitted_directory, student, "."))
        known = lessons(Path(directory.root))
        try:
            return [stray_note(student, stray, known) for stray in stray_lessons(folder, known)]
        except OSError:
            return []


def markdown_text(text: str) -> str:
    """A note as Markdown that shows it as written: a folder's name is the student's, and the
    feedback's HTML renders what Markdown or HTML it would hold."""
    return "".join("\\" + ch if ch in "\\`*_[]<>&!#|~" else ch for ch in text)
