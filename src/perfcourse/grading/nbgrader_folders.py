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


def source_notebook_path(config, resources) -> Path | None:
    """The instructor's source notebook of the one being graded (never the student's copy)."""
    notebook = (resources or {}).get("nbgrader", {}).get("notebook")
    source = folder(config, resources, "source")
    return source / f"{notebook}.ipynb" if source and notebook else None


def source_notebook(config, resources):
    """The instructor's source notebook, read; None where there is none."""
    import nbformat

    path = source_notebook_path(config, resources)
    return nbformat.read(path, as_version=4) if path and path.is_file() else None


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
