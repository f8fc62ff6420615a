"""nbgrader's own autograde, with each notebook bounded before nbformat parses it (issue 51).

`perfcourse grade` checks every submitted notebook in its survey (bounded_read.check_notebook)
before nbgrader sees it. An instructor may grade without it: `nbgrader autograde` in the course
root, or Formgrader's Autograde button, which runs the same converter (NbGraderAPI.autograde)
inside the instructor's Jupyter server. There the converter reads each notebook through its
exporter (`exporter.from_filename`, then nbformat), the first step that sees the file's path, and
the exporter is nbgrader's to configure (`Autograde.exporter_class`, set in grader_config.py).

`BoundedNotebookExporter` is nbconvert's NotebookExporter that first hands the path to
bounded_read (the same limits, the same bounded child), so a notebook too large, too many objects
or too deep is refused before this process parses any of it: nbgrader logs the reason (after
NOT_GRADED, where the grade report reads it), removes what it built for that submission and goes
on with the next. A notebook that passes is read exactly as NotebookExporter reads it.
"""
from __future__ import annotations

from pathlib import Path

from nbconvert.exporters import NotebookExporter

from ..course import CourseError
from ..nbgrader_bridge import NOT_GRADED
from . import bounded_read


class BoundedNotebookExporter(NotebookExporter):
    """NotebookExporter that refuses a notebook bounded_read refuses, before reading it."""

    def from_filename(self, filename, resources=None, **kw):
        try:
            bounded_read.check_notebook(Path(filename))
        except CourseError as exc:  # SubmissionRefused (too big, too deep) or no valid notebook
            self.log.error("%s%s: %s", NOT_GRADED, Path(filename).name, exc)
            raise
        return super().from_filename(filename, resources=resources, **kw)
