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
code cell of lesson B's release notebook that is no solution cell, or when its statements are all
among that cell's, in any order and any names that either binds (`Statements`: a copy whose defs
are reordered and whose functions, arguments and variables are renamed is still found; what the
code reads but does not bind, a module's attributes, the constants, must match). Answers of fewer
than MIN_STATEMENTS statements (a one-line function) are too plain to be a giveaway.
"""
from __future__ import annotations

import ast
import datetime
import functools
import io
import re
import tokenize
from collections import Counter
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


# The fields that hold a name a statement may bind, by node type (ast.Name's `id` apart).
_NAMING_FIELDS = {ast.FunctionDef: "name", ast.AsyncFunctionDef: "name", ast.ClassDef: "name", ast.arg: "arg",
                  ast.ExceptHandler: "name", ast.Global: "names", ast.Nonlocal: "names"}
_IGNORED_FIELDS = ("ctx", "type_comment", "asname")  # an import's `as` name is numbered where it is used


def _shape(node, rename) -> str:
    """A node as ast.dump would write it, less positions, docstrings and `as` names, each name the
    cell binds through `rename` (numbered by its first use in the statement: a renamed copy reads the same)."""
    if isinstance(node, list):
        return "[" + ",".join(_shape(item, rename) for item in node if not _docstring(item)) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)
    if isinstance(node, ast.Name):
        return f"Name({rename(node.id)})"
    naming = _NAMING_FIELDS.get(type(node))
    parts = []
    for field, value in ast.iter_fields(node):
        if field in _IGNORED_FIELDS:
            continue
        if field == naming:
            value = [rename(name) for name in value] if isinstance(value, list) else value and rename(value)
            parts.append(repr(value))
        else:
            parts.append(_shape(value, rename))
    return f"{type(node).__name__}({','.join(parts)})"


def _docstring(statement) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def _outer(statements: list) -> list:
    """The statements, and those in the blocks of each that is no function (a class's defs, an if's)."""
    found = []
    for statement in statements:
        found.append(statement)
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(statement, field, None)
                if isinstance(block, list):
                    found += _outer([s for s in block if isinstance(s, ast.stmt)]
                                    + [s for h in block if isinstance(h, (ast.ExceptHandler, ast.match_case))
                                       for s in h.body])
    return found


def _bound(tree) -> set[str]:
    """Every name the code binds, at any depth: defs, classes, arguments, assignments, imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


class Statements:
    """A cell's code as statements compared whatever their order and the names its code binds: its
    top-level ones (`top`, as an answer is compared) and those a given cell holds outside its
    functions (`every`: a def inside a class or an if, say). Empty where the code does not parse (a magic)."""

    def __init__(self, source: str):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            tree = ast.Module(body=[], type_ignores=[])
        bound = _bound(tree)

        def seen(statement) -> str:
            numbers: dict[str, str] = {}
            return _shape(statement, lambda name: numbers.setdefault(name, f"_{len(numbers)}")
                          if name in bound else name)

        self.top = Counter(seen(s) for s in tree.body if not _docstring(s))
        self.every = Counter(seen(s) for s in _outer(tree.body) if not _docstring(s))
        # What a renamed copy still spells as here: the attributes and the names it reads but does not bind.
        self.kept = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)} | {
            node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id not in bound}

    def holds(self, answer: "Statements") -> bool:
        """Whether every top-level statement of `answer` is among this cell's (an empty answer is not)."""
        return bool(answer.top) and not answer.top - self.every


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
        if statements(cell.source) >= MIN_STATEMENTS:
            answers.append((grade_id, task, (code_lines(cell.source, delimiters), Statements(cell.source))))
    return answers


@dataclass(frozen=True)
class GivenCell:
    lines: tuple[str, ...]  # its code lines (code_lines)
    source: str
    words: frozenset[str]   # every word it spells: a cell lacking one an answer keeps cannot hold it

    @classmethod
    def of(cls, source: str) -> "GivenCell":
        return cls(code_lines(source), source, frozenset(re.findall(r"\w+", source)))


def _given_cells(release_cells: list) -> list[tuple[int, GivenCell]]:
    """(position from 1, the cell) of each code cell of a release notebook that is no solution."""
    from nbgrader.utils import is_solution

    return [(number, GivenCell.of(cell.source)) for number, cell in enumerate(release_cells, 1)
            if cell.cell_type == "code" and not is_solution(cell)]


@functools.lru_cache(maxsize=None)
def _statements(source: str) -> Statements:
    return Statements(source)


def gives(given: GivenCell, answer: tuple[tuple[str, ...], Statements]) -> bool:
    """Whether a given cell holds a graded cell's answer ((code lines, statements)): its lines in order
    and together, or its statements (read only where the cell spells every word a renamed copy keeps)."""
    if _holds(given.lines, answer[0]):
        return True
    return answer[1].kept <= given.words and _statements(given.source).holds(answer[1])


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
                cell = next((number for number, code in given[giver] if gives(code, answer)), None)
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
