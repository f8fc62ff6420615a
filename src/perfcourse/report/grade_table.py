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
import textwrap
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


def terminal_width() -> int:
    """The columns the table may fill: the terminal's where the table goes to one (never under 80),
    else 120 (a log or a pipe: the same table wherever it is read)."""
    import shutil

    return min(max(shutil.get_terminal_size((120, 24)).columns, 80), 240) if sys.stdout.isatty() else 120


def _wrapped(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_on_hyphens=False) or ["-"]


def table(outcomes: list[Outcome], expected: dict | None = None, width: int | None = None) -> str:
    """One row per notebook; with `expected` ({(student, lesson): score, or None where the
    submission must be refused}), whether each raw score is the intended one. The notes and flags,
    the last two columns, are wrapped within `width` (the terminal's); where it leaves them too
    little room, they are printed whole on lines of their own below their row."""
    width = width or terminal_width()
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
    fixed = [max(len(r[i]) for r in rows) for i in range(len(header) - 2)]
    room = width - sum(w + 2 for w in fixed)  # what the notes and flags share
    if room < 40:  # too narrow for two columns: each row's notes and flags on lines of their own below it
        widths = fixed + [len("notes")]
        lines = []
        for number, r in enumerate(rows):
            below = number > 0 and (r[-2], r[-1]) != ("-", "-")
            shown = ("below", "below") if below else r[-2:]
            lines.append("  ".join([c.ljust(w) for c, w in zip(r[:-2] + (shown[0],), widths)] + [shown[1]]).rstrip())
            if number == 0:
                lines.append("  ".join("-" * w for w in widths) + "  -----")
            elif below:
                for label, text in (("notes", r[-2]), ("flags", r[-1])):
                    lines += textwrap.wrap(text, width, initial_indent=f"    {label}: ", subsequent_indent=" " * 11,
                                           break_on_hyphens=False)
        return "\n".join(lines)
    longest_notes, longest_flags = max(len(r[-2]) for r in rows), max(len(r[-1]) for r in rows)
    notes_width = max(min(longest_notes, room - min(longest_flags, room // 3) - 2), len("notes"))
    flags_width = max(min(longest_flags, room - notes_width - 2), len("flags"))
    widths = fixed + [notes_width]
    lines = []
    for number, r in enumerate(rows):
        notes, flags = _wrapped(r[-2], notes_width), _wrapped(r[-1], flags_width)
        for at in range(max(len(notes), len(flags))):
            cells = list(r[:-2]) if at == 0 else [""] * len(fixed)
            cells.append(notes[at] if at < len(notes) else "")
            lines.append("  ".join([c.ljust(w) for c, w in zip(cells, widths)]
                                   + [flags[at] if at < len(flags) else ""]).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths) + "  -----")
    return "\n".join(lines)


COLUMNS = (*EXPORT_COLUMNS, "graded", "seconds", "error", "notes", "flags")


def write_csv(path: Path, outcomes: list[Outcome]) -> int:
    """The whole class: nbgrader export's columns for each notebook, then what the run that last
    graded it adds (when it was graded and in how many seconds, and the grader's error, notes and
    flags). This run's notebooks get new rows; every other row of the file is kept as it was, so a
    run narrowed to a student or a lesson rewrites only theirs, and a notebook this run found up to
    date keeps the run that graded it (its 'now' and its seconds). Returns how many rows were kept."""
    try:
        earlier = read_rows(path)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:  # kept beside, never silently lost
        earlier, aside = [], path.with_name(path.name + ".unreadable")
        os.replace(path, aside)
        print(f"WARNING: {path} could not be read ({exc}): set aside as {aside}; the new one holds this "
              "run's notebooks only", file=sys.stderr)
    before = {(row.get("student_id") or "", row.get("assignment") or ""): row for row in earlier}
    rows = {}
    for o in outcomes:
        exported = o.export or {"assignment": o.lesson, "student_id": o.student}
        graded, seconds = ("before", "") if o.up_to_date else ("now" if not o.error else "no", str(o.seconds))
        kept_row = before.get((o.student, o.lesson))
        if o.up_to_date and kept_row and kept_row.get("graded") in ("now", "before"):
            graded, seconds = kept_row["graded"], kept_row.get("seconds") or ""  # not graded again: as it was
        rows[(o.student, o.lesson)] = [str(exported.get(column, "")) for column in EXPORT_COLUMNS] + [
            graded, seconds, o.error or "", "; ".join(o.notes), "; ".join(o.flags)]
    kept = 0
    for key, row in before.items():
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
