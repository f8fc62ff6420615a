"""Loaded by nbgrader, not imported: grader_config.py names `perfcourse.stubs.TaskStubs` among
generate_assignment's preprocessors. Release: an unfilled solution cell says which task it is,
instead of a bare NotImplementedError.

nbgrader's ClearSolutions replaces each solution with one stub for the whole course
(`raise NotImplementedError()`). A student who runs a fresh notebook then meets a bare
NotImplementedError, then NameErrors. `TaskStubs`, run by generate_assignment right after
ClearSolutions, words each cell's stub from the lesson's own "Task N: ..." heading above it:

    raise NotImplementedError("Task 2 (a synchronized timer) is not done yet: replace this line with your code")
"""
from __future__ import annotations

import re

from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_solution

BARE = "raise NotImplementedError()"
HEADING = re.compile(r"^#+\s*(Task\s+\d+)\s*:\s*(.+?)\s*$")


def task_of(markdown: str) -> tuple[str, str] | None:
    """("Task 2", "a synchronized timer") from the last "Task N: ..." heading of a markdown cell."""
    found = None
    for line in markdown.splitlines():
        match = HEADING.match(line.strip())
        if match:
            found = match.group(1), match.group(2).replace("`", "").rstrip(".")
    return found


def stub(task: tuple[str, str]) -> str:
    name, title = task
    message = f"{name} ({title}) is not done yet: replace this line with your code"
    return f"raise NotImplementedError({message!r})"


class TaskStubs(NbGraderPreprocessor):
    """Name the task in every solution cell's stub (cells before any Task heading keep nbgrader's)."""

    def preprocess(self, nb, resources):
        task = None
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                task = task_of(cell.source) or task
            elif task is not None and is_solution(cell) and BARE in cell.source:
                cell.source = cell.source.replace(BARE, stub(task))
        return nb, resources
