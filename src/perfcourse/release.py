"""source/ -> release/: nbgrader's generate_assignment strips solutions and hidden tests.

The release notebooks are committed (students fetch them from the repository or Colab), so a
check regenerates them in a scratch copy of the course and compares.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat

from .course import lessons, read_notebook, source_notebook
from .nbgrader_runner import run_nbgrader

CONFIG_FILES = ("grader_config.py", "nbgrader_config.py")


def generate(root: Path, lesson_ids: list[str] | None = None) -> list[Path]:
    """Write release/<lesson>/ for each lesson and record its cells in the gradebook."""
    written = []
    for lesson in lesson_ids or lessons(root):
        read_notebook(source_notebook(root, lesson))  # a corrupt source fails here, by name
        run_nbgrader(root, "generate_assignment", lesson, "--force")
        written.append(root / "release" / lesson / f"{lesson}.ipynb")
    return written


def _comparable(nb: nbformat.NotebookNode) -> list:
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in nb.cells]


def stale(root: Path) -> list[str]:
    """Lessons whose committed release differs from what source/ generates now."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="perfcourse-release-") as scratch:
        scratch = Path(scratch)
        for name in CONFIG_FILES:
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
