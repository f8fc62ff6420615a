"""Which part each cell of a notebook plays in grading, decided from the instructor's source notebook.

A grade cell runs on the trusted kernel; every other code cell on the student's kernel, except the
instructor's figure cells and the lesson's report cells after the last grade cell: they earn no
points and no test reads them, so they are skipped with a line saying why. What is skipped is
matched by the source text of the instructor's own cells, never by a tag a student could add or
remove (`run_anyway`). The trusted kernel imports what the lesson's cells import (`lesson_imports`)
before the first grade cell.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from nbgrader.utils import is_grade, is_solution

from ..course import FIGURE_TAG
from .code_scan import python_of

FIGURE_NOT_DRAWN = "(the figure is not drawn while grading: figures earn no points; run the notebook to see it)\n"
REPORT_NOT_RUN = ("(not run while grading: this cell of the lesson comes after every test and earns no points; "
                  "run the notebook to see its output)\n")


@dataclass
class CellRoles:
    """A notebook's cells as grading treats them (`of`: from the instructor's notebook and the one graded)."""

    imports: str = ""                          # the lesson's imports, for the trusted kernel
    figures: set[str] = field(default_factory=set)  # the source of the instructor's figure cells
    report: set[str] = field(default_factory=set)   # ... and of its report cells after the last grade cell
    last_grade: int = 0                        # index of the graded notebook's last grade cell

    @classmethod
    def of(cls, instructor, nb) -> "CellRoles":
        """Roles for `nb`; without the instructor's notebook (None), no cell is skipped and nothing imported."""
        last_grade = max((i for i, cell in enumerate(nb.cells) if is_grade(cell)), default=len(nb.cells))
        if instructor is None:
            return cls(last_grade=last_grade)
        return cls(lesson_imports(instructor), figure_sources(instructor), report_sources(instructor), last_grade)

    def skipped(self, cell, index: int) -> str | None:
        """What a cell grading skips shows instead of its output; None for a cell that runs."""
        if is_grade(cell):
            return None
        if cell.source in self.figures:
            return FIGURE_NOT_DRAWN
        if index > self.last_grade and cell.source in self.report:
            return REPORT_NOT_RUN
        return None


def run_anyway(cell, tag: str) -> None:
    """Remove `tag` from the cell's tags: nbclient does not run a cell that has it ("skip-execution"),
    and a grade cell that never runs shows no error, which nbgrader scores as passed. The grader runs
    every cell handed in; which cells it skips is decided from source/ (figures, the report), never
    from a student's tags."""
    tags = cell.get("metadata", {}).get("tags")
    if isinstance(tags, list) and tag in tags:
        cell.metadata["tags"] = [t for t in tags if t != tag]


def figure_sources(nb) -> set[str]:
    """The source text of the instructor's figure cells: grading skips a cell only when its text is
    one of these, so a tag a student adds to their own copy skips nothing."""
    return {cell.source for cell in nb.cells
            if cell.cell_type == "code" and FIGURE_TAG in cell.metadata.get("tags", [])}


def report_sources(nb) -> set[str]:
    """The source text of the instructor's lesson code cells after the last grade cell (the lesson's
    report: measurements for its figure). No test reads them and they earn no points, so grading
    skips them where they come after every grade cell of the notebook being graded; a cell the
    student wrote there still runs."""
    grades = [i for i, cell in enumerate(nb.cells) if is_grade(cell)]
    if not grades:
        return set()
    return {cell.source for cell in nb.cells[grades[-1] + 1:]
            if cell.cell_type == "code" and not is_solution(cell) and cell.source.strip()}


def lesson_imports(nb) -> str:
    """The import statements of the instructor's lesson cells that grade cells may rely on.

    Lesson cells (neither solution nor grade cells) before the last grade cell, in order: the
    report cells after it (plotting) are not needed by any check.
    """
    grades = [i for i, cell in enumerate(nb.cells) if is_grade(cell)]
    found = []
    for cell in nb.cells[: (grades[-1] if grades else 0)]:
        if cell.cell_type != "code" or is_grade(cell) or is_solution(cell):
            continue
        tree = python_of(cell)
        if tree is not None:
            found += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return "\n".join(dict.fromkeys(found))
