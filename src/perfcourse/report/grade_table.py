"""The grade table printed after grading, and grades.csv.

Both name, per submission, the grader's notes (why it failed a cell) and the evidence flags (what
the student's code did that deserves a human look: see perfcourse.kernel.evidence). Flags are
evidence for review, not a verdict: they never change a score.
"""
from __future__ import annotations

import csv
import io
import os
import sys
from pathlib import Path

from ..course import write_atomic
from ..grading.worker_slot import Outcome


EXPORT_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "raw_score", "late_submission_penalty",
                  "score", "max_score")  # nbgrader's CSV export plugin's, as `nbgrader export` writes them


def _points(value) -> str:
    return f"{float(value):g}"


def _score(o: Outcome) -> str:
    """The score nbgrader export gives (raw score less the late penalty), out of the maximum."""
    if o.export is None:
        return "not graded"
    return f"{_points(o.export['score'])}/{_points(o.export['max_score'])}"


def _penalty(o: Outcome) -> str:
    penalty = float(o.export["late_submission_penalty"] or 0) if o.export else 0.0
    return f"-{_points(penalty)} late" if penalty else "-"


def table(outcomes: list[Outcome], expected: dict | None = None) -> str:
    """One row per notebook; with `expected` ({(student, lesson): score, or None where the
    submission must be refused}), whether each raw score is the intended one."""
    header = ("student", "lesson", "score", "penalty", "seconds") + (("expected",) if expected else ()) \
        + ("notes", "flags")
    rows = [header]
    for o in outcomes:
        seconds = "up to date" if o.up_to_date else f"{o.seconds:.1f}"
        row = (o.student, o.lesson, _score(o), _penalty(o), seconds)
        if expected:
            got = o.score.score if o.score else None
            if (o.student, o.lesson) not in expected:
                said = "-"
            else:
                want = expected[(o.student, o.lesson)]
                said = ("not graded " if want is None else f"{_points(want)} ") + ("ok" if got == want else "MISMATCH")
            row += (said,)
        row += ("; ".join(([o.error] if o.error else []) + o.notes) or "-", "; ".join(o.flags) or "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    lines = ["  ".join([c.ljust(w) for c, w in zip(r[:-1], widths)] + [r[-1]]).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  -----")
    return "\n".join(lines)


COLUMNS = (*EXPORT_COLUMNS, "graded", "seconds", "error", "notes", "flags")


def write_csv(path: Path, outcomes: list[Outcome]) -> int:
    """The whole class: nbgrader export's columns for each notebook, then what the run that last
    saw it adds (when it was graded, and the grader's error, notes and flags). This run's
    notebooks get new rows; every other row of the file is kept as it was, so a run narrowed to a
    student or a lesson rewrites only theirs. Returns how many rows were kept."""
    rows = {}
    for o in outcomes:
        exported = o.export or {"assignment": o.lesson, "student_id": o.student}
        rows[(o.student, o.lesson)] = [str(exported.get(column, "")) for column in EXPORT_COLUMNS] + [
            "before" if o.up_to_date else ("now" if not o.error else "no"),
            str(o.seconds), o.error or "", "; ".join(o.notes), "; ".join(o.flags)]
    try:
        earlier = read_rows(path)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:  # kept beside, never silently lost
        earlier, aside = [], path.with_name(path.name + ".unreadable")
        os.replace(path, aside)
        print(f"WARNING: {path} could not be read ({exc}): set aside as {aside}; the new one holds this "
              "run's notebooks only", file=sys.stderr)
    kept = 0
    for row in earlier:
        key = (row.get("student_id") or "", row.get("assignment") or "")
        if all(key) and key not in rows:
            rows[key] = [row.get(column) or "" for column in COLUMNS]
            kept += 1
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    writer.writerows(row for _, row in sorted(rows.items()))
    write_atomic(path, buffer.getvalue())
    return kept


def read_rows(path: Path) -> list[dict]:
    """The rows of a grades.csv, none when there is none; OSError, UnicodeDecodeError or csv.Error
    when it cannot be read as one."""
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
