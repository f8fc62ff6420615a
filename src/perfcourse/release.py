"""source/ -> release/: nbgrader's generate_assignment strips solutions and hidden tests.

The release notebooks are committed (students fetch them from the repository or Colab), so a
check regenerates them in a scratch copy of the course and compares.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import re

import nbformat

from .course import CourseError, lessons, read_notebook, settings, source_notebook, write_atomic
from .nbgrader_runner import run_nbgrader

CONFIG_FILES = ("grader_config.py", "nbgrader_config.py", "course.toml")
REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
COLAB_CELL_ID = "open-in-colab"


def colab_link(root: Path, lesson: str) -> str | None:
    """The "Open in Colab" address of a release notebook, from course.toml's [colab] setting only."""
    colab = settings(root).get("colab", {})
    repository, branch = colab.get("repository", ""), colab.get("branch", "main")
    if not repository:
        return None
    if not isinstance(repository, str) or not REPOSITORY.match(repository):
        raise CourseError(f"{root / 'course.toml'}: [colab] repository must be 'owner/name', got {repository!r}")
    if not isinstance(branch, str) or not branch or any(ch.isspace() for ch in branch):
        raise CourseError(f"{root / 'course.toml'}: [colab] branch must be a branch name, got {branch!r}")
    return (f"https://colab.research.google.com/github/{repository}/blob/{branch}/"
            f"release/{lesson}/{lesson}.ipynb")


def _add_colab_link(root: Path, lesson: str, path: Path) -> None:
    link = colab_link(root, lesson)
    if link is None:
        return
    nb = read_notebook(path)
    cell = nbformat.v4.new_markdown_cell(
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({link})")
    cell.id = COLAB_CELL_ID
    nb.cells.insert(0, cell)
    write_atomic(path, nbformat.writes(nb))


def generate(root: Path, lesson_ids: list[str] | None = None) -> list[Path]:
    """Write release/<lesson>/ for each lesson and record its cells in the gradebook."""
    written = []
    for lesson in lesson_ids or lessons(root):
        read_notebook(source_notebook(root, lesson))  # a corrupt source fails here, by name
        colab_link(root, lesson)  # so does a bad [colab] setting, before nbgrader writes anything
        run_nbgrader(root, "generate_assignment", lesson, "--force")
        path = root / "release" / lesson / f"{lesson}.ipynb"
        _add_colab_link(root, lesson, path)
        written.append(path)
    return written


def _comparable(nb: nbformat.NotebookNode) -> list:
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in nb.cells]


def stale(root: Path) -> list[str]:
    """Lessons whose committed release differs from what source/ generates now."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="perfcourse-release-") as scratch:
        scratch = Path(scratch)
        for name in CONFIG_FILES:
            if (root / name).is_file():
                shutil.copy2(root / name, scratch / name)
        shutil.copytree(root / "source", scratch / "source")
        for lesson in lessons(root):
            generate(scratch, [lesson])
            committed = root / "release" / lesson / f"{lesson}.ipynb"
            if not committed.is_file():
                problems.append(f"{committed.relative_to(root)}: missing (run 'make release')")
                continue
            fresh = read_notebook(scratch / "release" / lesson / f"{lesson}.ipynb")
            if _comparable(read_notebook(committed)) != _comparable(fresh):
                problems.append(f"{committed.relative_to(root)}: stale against source/ (run 'make release')")
    return problems
