"""Where the notebook being graded lies in nbgrader's course folders, and what of them grading keeps.

nbgrader hands its preprocessors `resources["nbgrader"]` (assignment, student, notebook); the
folders follow from the course's configuration (CourseDirectory.format_path).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def folder(config, resources, kind: str, student: str = ".") -> Path | None:
    """A folder of the notebook being graded in nbgrader's layout (CourseDirectory.format_path)."""
    info = (resources or {}).get("nbgrader", {})
    if not info.get("assignment"):
        return None
    from nbgrader.coursedir import CourseDirectory

    directory = CourseDirectory(config=config)
    return Path(directory.format_path(getattr(directory, f"{kind}_directory"), student, info["assignment"]))


def submission_folder(config, resources) -> Path | None:
    """submitted/<student>/<assignment>/ of the notebook being graded."""
    student = (resources or {}).get("nbgrader", {}).get("student")
    return folder(config, resources, "submitted", student) if student else None


def lesson_notebook(config, resources, kind: str = "source") -> Path | None:
    """The notebook being graded as the course's `kind` folder ("source", "release") holds it, never
    the student's copy; None where nbgrader names no assignment or notebook."""
    notebook = (resources or {}).get("nbgrader", {}).get("notebook")
    lesson = folder(config, resources, kind)
    return lesson / f"{notebook}.ipynb" if lesson and notebook else None


def read_lesson_notebook(config, resources, kind: str = "source", strict: bool = False):
    """The lesson's notebook in the `kind` folder, read and validated: grading's one reader of the
    lessons' notebooks (the metadata's restoring, the grader's cell roles and recount, the feedback's
    notes). None where there is none; where the file is no notebook, None too, or with `strict` the
    CourseError that names it (the grader then refuses the notebook rather than grade without it)."""
    from ..course import CourseError, read_notebook

    path = lesson_notebook(config, resources, kind)
    if path is None or not path.is_file():
        return None
    try:
        return read_notebook(path)
    except CourseError:
        if strict:
            raise
        return None


def autograded_folder(config, resources) -> Path | None:
    """autograded/<student>/<assignment>/, when nbgrader writes the graded notebook there."""
    student = (resources or {}).get("nbgrader", {}).get("student")
    found = folder(config, resources, "autograded", student) if student else None
    path = (resources or {}).get("metadata", {}).get("path")
    return found if found and path and Path(path).resolve() == found.resolve() else None


# What nbgrader's exchange puts beside a submission and reads back when it releases feedback.
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")


def keep_only_notebooks(graded: Path | None) -> None:
    """Remove from autograded/<student>/<lesson>/ what nbgrader copied beside the notebook.

    The kernel gets the submission's files in its own scratch folder; autograded/ (and so the
    feedback nbgrader copies from it) keeps the graded notebook, and the two files of nbgrader's
    exchange that `nbgrader release_feedback` (Formgrader's Release Feedback) reads from the
    feedback folder. Nothing here follows a link.
    """
    if graded is None or graded.is_symlink() or not graded.is_dir():
        return
    for entry in os.scandir(graded):
        if (entry.name.endswith(".ipynb") or entry.name in NBGRADER_FILES) and entry.is_file(follow_symlinks=False):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
