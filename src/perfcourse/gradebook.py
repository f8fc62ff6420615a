"""Read the course's nbgrader configuration and the scores nbgrader stored in its gradebook."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader


def course_config(root: Path):
    """The configuration a plain `nbgrader` run in `root` sees (nbgrader_config.py -> grader_config.py)."""
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    return config


def db_url(root: Path) -> str:
    return CourseDirectory(config=course_config(root)).db_url


@dataclass
class NotebookScore:
    student: str
    lesson: str
    score: float
    max_score: float
    cells: dict[str, float]  # grade_id -> points earned


def notebook_score(root: Path, lesson: str, student: str) -> NotebookScore | None:
    """The autograded score of one student's lesson notebook, or None when nbgrader has none."""
    with Gradebook(db_url(root)) as gb:
        try:
            nb = gb.find_submission_notebook(lesson, lesson, student)
        except MissingEntry:
            return None
        cells = {grade.name: float(grade.score) for grade in nb.grades}
        return NotebookScore(student, lesson, float(nb.score), float(nb.max_score), cells)
