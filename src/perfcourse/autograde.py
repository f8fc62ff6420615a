"""submitted/ -> autograded/ + gradebook: nbgrader autograde, one student's notebook at a time.

Scores go to nbgrader's gradebook (the store of record) and, as a convenience, to grades.csv.
"""
from __future__ import annotations

import csv
import io
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .course import CourseError, write_atomic
from .gradebook import NotebookScore, notebook_score
from .nbgrader_runner import run_nbgrader


@dataclass
class Outcome:
    student: str
    lesson: str
    seconds: float
    score: NotebookScore | None
    error: str | None = None


def submissions(root: Path, lesson_ids: list[str]) -> list[tuple[str, str]]:
    """(student, lesson) pairs found in nbgrader's layout submitted/<student>/<lesson>/."""
    folder = root / "submitted"
    if not folder.is_dir():
        return []
    return sorted(
        (student.name, lesson)
        for student in folder.iterdir() if student.is_dir()
        for lesson in lesson_ids if (student / lesson).is_dir()
    )


def autograde(root: Path, pairs: list[tuple[str, str]], progress=sys.stderr) -> list[Outcome]:
    outcomes = []
    for number, (student, lesson) in enumerate(pairs, 1):
        print(f"[{number}/{len(pairs)}] autograding {student} / {lesson}", file=progress, flush=True)
        started = time.perf_counter()
        error = None
        try:
            run_nbgrader(root, "autograde", lesson, "--student", student, "--force")
        except CourseError as exc:
            error = str(exc)
        seconds = time.perf_counter() - started
        score = notebook_score(root, lesson, student)
        if score is None and error is None:
            error = "nbgrader recorded no score"
        outcomes.append(Outcome(student, lesson, seconds, score, error))
    return outcomes


def _points(value: float) -> str:
    return f"{value:g}"


def table(outcomes: list[Outcome], expected: dict | None = None) -> str:
    """A plain-text grade table; with `expected`, a column saying whether each score is the intended one."""
    rows = [("student", "lesson", "score", "seconds") + (("expected",) if expected else ())]
    for o in outcomes:
        score = f"{_points(o.score.score)}/{_points(o.score.max_score)}" if o.score else "not graded"
        row = (o.student, o.lesson, score, f"{o.seconds:.1f}")
        if expected:
            want = expected.get((o.student, o.lesson))
            got = o.score.score if o.score else None
            row += ("-" if want is None else f"{_points(want)} " + ("ok" if got == want else "MISMATCH"),)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_csv(path: Path, outcomes: list[Outcome]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", "lesson", "score", "max_score", "error"])
    for o in outcomes:
        writer.writerow([o.student, o.lesson,
                         o.score.score if o.score else "", o.score.max_score if o.score else "",
                         o.error or ""])
    write_atomic(path, buffer.getvalue())
