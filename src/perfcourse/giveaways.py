"""Graded answers one lesson gives away in another: a lesson's solution, word for word in a later
lesson's given (locked) cell, for `perfcourse publish` to warn about.

Later lessons hand students the course's own tools (performance-01's timer, most of all) in given
cells, on purpose. A student who can open such a lesson before handing in the earlier one can copy
its graded answer from it, so the schedule must release the giving lesson later. This module finds
the pairs; `perfcourse publish` says which of them the schedule publishes together.

A graded cell of lesson A is a solution cell of source/ (nbgrader's `solution: true`) that A's
release blanks (its cell of the same grade id holds other code). Its answer is the cell's source
without nbgrader's solution delimiters, compared as code: comments and blank lines dropped, runs
of whitespace collapsed (indentation too), so that a copy that is re-indented or commented
otherwise is still found. It is given away when those lines appear, in order and together, in a
code cell of lesson B's release notebook that is no solution cell. Answers of fewer than
MIN_STATEMENTS statements (a one-line function) are too plain to be a giveaway.
"""
from __future__ import annotations

import ast
import datetime
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from . import nbgrader_bridge
from .course import Settings, lessons, read_notebook, source_notebook
from .release import released
from .stubs import task_of

MIN_STATEMENTS = 3


@dataclass(frozen=True)
class Giveaway:
    lesson: str          # A: whose graded cell it is
    grade_id: str
    task: str | None     # "Task 2", from the lesson's heading above the cell
    giver: str           # B: the lesson whose release gives it
    cell: int            # B's release notebook cell that holds it, counted from 1

    def warning(self) -> str:
        task = f" ({self.task})" if self.task else ""
        return (f"{self.giver} gives {self.lesson}'s graded cell `{self.grade_id}`{task} in its cell {self.cell}: "
                f"release {self.giver} after {self.lesson}'s work is in ([schedule] in course.toml)")


def solution_delimiters(root: Path) -> tuple[str, str]:
    """The delimiters the course's ClearSolutions removes solutions between (nbgrader's, or the
    course's configuration of them)."""
    from nbgrader.preprocessors import ClearSolutions

    clear = ClearSolutions(config=nbgrader_bridge.config(root))
    return clear.begin_solution_delimeter, clear.end_solution_delimeter


def _without_comments(source: str) -> str:
    """The source with its comments removed by Python's tokenizer (a `#` in a string stays); a cell
    the tokenizer refuses (an IPython magic, a half-written line) loses only its comment lines."""
    try:
        comments = [token.start for token in tokenize.generate_tokens(io.StringIO(source).readline)
                    if token.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
    lines = source.splitlines()
    for row, column in comments:
        lines[row - 1] = lines[row - 1][:column]
    return "\n".join(lines)


def code_lines(source: str, delimiters: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A cell's code as compared here: delimiter lines out, comments and blank lines dropped,
    each line's whitespace collapsed."""
    kept = "\n".join(line for line in source.splitlines() if not any(mark in line for mark in delimiters))
    lines = (re.sub(r"\s+", " ", line).strip() for line in _without_comments(kept).splitlines())
    return tuple(line for line in lines if line)


def statements(source: str) -> int:
    """How many statements a cell's code holds (its code lines, where it does not parse)."""
    try:
        return sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(source)))
    except SyntaxError:
        return len(code_lines(source))


def _holds(given: tuple[str, ...], answer: tuple[str, ...]) -> bool:
    return any(given[start:start + len(answer)] == answer for start in range(len(given) - len(answer) + 1))


def _graded_answers(root: Path, lesson: str, release_cells: list, delimiters: tuple[str, str]) -> list[tuple]:
    """(grade id, task, answer) for each graded cell of `lesson` with enough code to give away."""
    from nbgrader.utils import is_solution

    blanked = {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in release_cells
               if cell.metadata.get("nbgrader", {}).get("grade_id")}
    answers, task = [], None
    for cell in read_notebook(source_notebook(root, lesson)).cells:
        if cell.cell_type == "markdown":
            found = task_of(cell.source)
            task = found[0] if found else task
            continue
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or not is_solution(cell) or blanked.get(grade_id, cell.source) == cell.source:
            continue
        answer = code_lines(cell.source, delimiters)
        if statements(cell.source) >= MIN_STATEMENTS:
            answers.append((grade_id, task, answer))
    return answers


def _given_cells(release_cells: list) -> list[tuple[int, tuple[str, ...]]]:
    """(position from 1, code) of each code cell of a release notebook that is no solution."""
    from nbgrader.utils import is_solution

    return [(number, code_lines(cell.source)) for number, cell in enumerate(release_cells, 1)
            if cell.cell_type == "code" and not is_solution(cell)]


def find(root: Path, lesson_ids: list[str] | None = None) -> list[Giveaway]:
    """Every graded cell of these lessons (all of source/'s) that another of them gives in its release,
    once per (cell, giving lesson), at the first cell that gives it. Lessons without a release notebook
    are left out."""
    chosen = [lesson for lesson in (lesson_ids or lessons(root)) if released(root, lesson).is_file()]
    delimiters = solution_delimiters(root)
    release_cells = {lesson: read_notebook(released(root, lesson)).cells for lesson in chosen}
    given = {lesson: _given_cells(release_cells[lesson]) for lesson in chosen}
    found = []
    for lesson in chosen:
        for grade_id, task, answer in _graded_answers(root, lesson, release_cells[lesson], delimiters):
            for giver in chosen:
                cell = next((number for number, code in given[giver] if _holds(code, answer)), None)
                if giver != lesson and cell is not None:
                    found.append(Giveaway(lesson, grade_id, task, giver, cell))
    return found


def published_together(found: list[Giveaway], course_settings: Settings) -> list[Giveaway]:
    """The giveaways whose giving lesson reaches students no later than the lesson it gives away: both
    on one date of [schedule], the giver earlier, or no schedule at all (every lesson at once). A lesson
    the schedule does not list waits: as a giver it gives nothing away yet; given away, it comes after
    every dated giver. Future dates count too, so the warning comes before the giving lesson is out."""
    if not course_settings.schedule:
        return list(found)
    dates: dict[str, datetime.date] = dict(course_settings.schedule)
    return [item for item in found
            if item.giver in dates and (item.lesson not in dates or dates[item.giver] <= dates[item.lesson])]
