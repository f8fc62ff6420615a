"""source/ -> release/: nbgrader's generate_assignment strips solutions and hidden tests.

The release notebooks are committed (students get them through the student publication,
`perfcourse publish`, or the exchange), so a check regenerates them in a scratch copy of the course
and compares.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat

from . import nbgrader_bridge
from .course import CONFIG_FILES, CourseError, copy_course, lessons, read_notebook, source_notebook, write_atomic
from .launch import colab_link

COLAB_CELL_ID = "open-in-colab"


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
        colab_link(root, lesson)  # so does a bad [publication] setting, before nbgrader writes anything
        nbgrader_bridge.generate_assignment(root, lesson)
        path = released(root, lesson)
        _add_colab_link(root, lesson, path)
        written.append(path)
    return written


def released(root: Path, lesson: str) -> Path:
    """release/<lesson>/<lesson>.ipynb, in nbgrader's layout."""
    return nbgrader_bridge.folder(root, "release", ".", lesson) / f"{lesson}.ipynb"


def released_lessons(root: Path) -> list[str]:
    """The lessons whose release notebook exists, in the course's order; none is an error."""
    found = [lesson for lesson in lessons(root) if released(root, lesson).is_file()]
    if not found:
        raise CourseError("release/ holds no lesson notebook: run 'make release' first")
    return found


def _comparable(nb: nbformat.NotebookNode) -> list:
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in nb.cells]


def stale(root: Path, lesson_ids: list[str] | None = None) -> list[str]:
    """Lessons (all, or these) whose committed release differs from what source/ generates now."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="perfcourse-release-") as scratch:
        scratch = copy_course(root, Path(scratch), CONFIG_FILES + ("source",))
        for lesson in lesson_ids or lessons(root):
            generate(scratch, [lesson])
            committed = released(root, lesson)
            if not committed.is_file():
                problems.append(f"{committed.relative_to(root)}: missing (run 'make release')")
                continue
            fresh = read_notebook(released(scratch, lesson))
            if _comparable(read_notebook(committed)) != _comparable(fresh):
                problems.append(f"{committed.relative_to(root)}: stale against source/ (run 'make release')")
    return problems
