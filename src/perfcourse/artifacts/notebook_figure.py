"""figure.py is the one home of the drawing code; every lesson notebook carries a copy of its text.

The copy is the code cell whose nbgrader grade_id is `figure_code` (tagged `figure`, locked, its
source collapsed), so a release notebook draws its figure on Colab with matplotlib alone.
`perfcourse figures` rewrites that cell of every source notebook from figure.py; `--check` names
each source or release notebook whose copy differs (release/ is generated from source/).
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from ..course import CourseError, lessons, read_notebook, source_notebook, write_atomic

FIGURE_CODE_ID = "figure_code"
FIGURE_PY = Path(__file__).with_name("figure.py")


def figure_code() -> str:
    """The text of figure.py, exactly as the notebooks must hold it."""
    return FIGURE_PY.read_text(encoding="utf-8")


def figure_cell(nb, name: str):
    """The notebook's figure_code cell, or a CourseError naming the notebook."""
    found = [cell for cell in nb.cells
             if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade_id") == FIGURE_CODE_ID]
    if len(found) != 1:
        raise CourseError(f"{name}: expected one code cell with grade_id {FIGURE_CODE_ID!r}, found {len(found)} "
                          f"(it holds the text of src/perfcourse/artifacts/figure.py, right before the drawing cell)")
    return found[0]


def stale(root: Path) -> list[str]:
    """Every source or release notebook whose figure_code cell is not figure.py's text."""
    from ..release import released

    code, problems = figure_code(), []
    for lesson in lessons(root):
        for path, fix in ((source_notebook(root, lesson), "run 'perfcourse figures'"),
                          (released(root, lesson), f"run 'perfcourse release --lesson {lesson}'")):
            name = str(path.relative_to(root))
            if not path.is_file():
                continue  # a missing release is `perfcourse release --check`'s to name
            try:
                if figure_cell(read_notebook(path), name).source != code:
                    problems.append(f"{name}: its figure_code cell differs from "
                                    f"src/perfcourse/artifacts/figure.py ({fix})")
            except CourseError as exc:
                problems.append(str(exc))
    return problems


def sync(root: Path, lesson_ids: list[str] | None = None) -> list[Path]:
    """Rewrite the figure_code cell of each source notebook that differs; the paths written."""
    code, written = figure_code(), []
    for lesson in lesson_ids or lessons(root):
        path = source_notebook(root, lesson)
        nb = read_notebook(path)
        cell = figure_cell(nb, str(path.relative_to(root)))
        if cell.source != code:
            cell.source = code
            write_atomic(path, nbformat.writes(nb) + "\n")  # the course's notebooks end with a newline
            written.append(path)
    return written
