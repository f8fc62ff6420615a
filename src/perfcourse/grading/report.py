"""The grade table printed after grading, and grades.csv.

Both name, per submission, the grader's notes (why it failed a cell) and the evidence flags (what
the student's code did that deserves a human look: see perfcourse.kernel.evidence). Flags are
evidence for review, not a verdict: they never change a score.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from ..course import write_atomic
from .run import Outcome


def _points(value: float) -> str:
    return f"{value:g}"


def table(outcomes: list[Outcome], expected: dict | None = None) -> str:
    """One row per notebook; with `expected`, whether each score is the intended one."""
    header = ("student", "lesson", "score", "seconds") + (("expected",) if expected else ()) + ("notes", "flags")
    rows = [header]
    for o in outcomes:
        score = f"{_points(o.score.score)}/{_points(o.score.max_score)}" if o.score else "not graded"
        row = (o.student, o.lesson, score, f"{o.seconds:.1f}")
        if expected:
            want = expected.get((o.student, o.lesson))
            got = o.score.score if o.score else None
            row += ("-" if want is None else f"{_points(want)} " + ("ok" if got == want else "MISMATCH"),)
        row += ("; ".join(([o.error] if o.error else []) + o.notes) or "-", "; ".join(o.flags) or "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    lines = ["  ".join([c.ljust(w) for c, w in zip(r[:-1], widths)] + [r[-1]]).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  -----")
    return "\n".join(lines)


def write_csv(path: Path, outcomes: list[Outcome]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", "lesson", "score", "max_score", "seconds", "error", "notes", "flags"])
    for o in outcomes:
        writer.writerow([o.student, o.lesson, o.score.score if o.score else "",
                         o.score.max_score if o.score else "", o.seconds, o.error or "", "; ".join(o.notes),
                         "; ".join(o.flags)])
    write_atomic(path, buffer.getvalue())
