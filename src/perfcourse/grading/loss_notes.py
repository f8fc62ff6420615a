"""Feedback's note of what a notebook lost against its release (grading/losses.py), for the student.

`LossNotes` is an nbgrader preprocessor for generate_feedback: it puts one markdown cell first
in the feedback, listing each loss (stripped metadata, a deleted solution or test cell), where the
notebook lost any. grader_config.py lists it in c.GenerateFeedback.preprocessors, after
nbgrader's GetGrades.
"""
from __future__ import annotations

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from ..course import CourseError, read_notebook
from .losses import lost_cells
from .restore_metadata import lesson_notebook

CELL_ID = "perfcourse-lost-cells"


class LossNotes(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        try:
            released = read_notebook(lesson_notebook(self.config, "release", resources))
        except CourseError:
            return nb, resources  # no release to compare with: nothing can be said
        notes = lost_cells(nb, released)
        if notes:
            cell = nbformat.v4.new_markdown_cell(
                "**Points this notebook lost outside your code** (the grade above already counts them):\n\n"
                + "\n".join(f"- {note}" for note in notes))
            cell.id = CELL_ID
            nb.cells.insert(0, cell)
        return nb, resources
