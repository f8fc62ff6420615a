"""`perfcourse report`: what the class got wrong, as one HTML page with its figures and a CSV.

The folder (default report/ in the course) holds index.html (self-contained: no script, no style
or font from elsewhere), one score histogram per lesson (<lesson>-scores.png), the pass rate of
every grade cell (cells.png), drawn with matplotlib, and cells.csv, the per-cell table. Everything
is drawn in memory and written to a temporary folder beside the target, which then replaces it:
a failure leaves the old report as it was. An existing folder is replaced only when it is empty
or a report this command wrote. Every string that comes from student work (ids, messages, flags,
notes) is escaped.
"""
from __future__ import annotations

import csv
import html
import io
import os
import re
import shutil
import statistics
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from ..course import CourseError
from .class_report import ClassReport, Lesson, collect
from ..grading.scratch import shown

GENERATOR = '<meta name="generator" content="perfcourse report">'
CSV_NAME = "cells.csv"
CSV_COLUMNS = ("lesson", "grade_id", "points", "students", "passed", "pass_rate", "top_messages")
TOP = 3  # messages per cell in the worst-first table and the CSV
SLOWEST = 10


def main(root: Path, lessons: list[str] | None, output: Path | None) -> int:
    """Collect, draw and write the report; print where it is."""
    target = Path(output).absolute() if output else root / "report"
    refuse_target(target)
    report = collect(root, lessons)
    files = render(report)
    write_folder(target, files)
    graded = len(report.submissions)
    print(f"wrote {target / 'index.html'} ({len(report.lessons)} lesson(s), {graded} graded notebook(s)), "
          f"{CSV_NAME} and {sum(name.endswith('.png') for name in files)} figure(s)")
    return 0


# --- the files -----------------------------------------------------------------------------------
def render(report: ClassReport) -> dict[str, bytes]:
    """name -> contents of every file of the report folder."""
    files = {f"{_file(lesson.lesson)}-scores.png": scores_figure(lesson) for lesson in report.lessons}
    files["cells.png"] = cells_figure(report)
    files[CSV_NAME] = cells_csv(report).encode("utf-8")
    files["index.html"] = page(report).encode("utf-8")
    return files


def _file(lesson: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", lesson)


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.0f} %"


def _top(cell, count: int = TOP) -> list[str]:
    return [f"({f.count}) " + " / ".join(f.message.splitlines()) for f in cell.failures[:count]]


def cells_csv(report: ClassReport) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for c in report.cells:
        writer.writerow([c.lesson, c.grade_id, _points(c.points), c.students, c.passed,
                         "" if c.pass_rate is None else f"{c.pass_rate:.4f}", " | ".join(_top(c))])
    return buffer.getvalue()


# --- figures -------------------------------------------------------------------------------------
def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def _label(text: str) -> str:
    return text.replace("$", r"\$")  # matplotlib reads $...$ as mathematics


def scores_figure(lesson: Lesson) -> bytes:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    bins = lesson.histogram
    fig = Figure(figsize=(5.2, 2.6))
    ax = fig.add_subplot()
    ax.bar([(b.low + b.high) / 2 for b in bins], [b.count for b in bins],
           width=[(b.high - b.low) * 0.9 for b in bins], color="#4c72b0")
    if lesson.median is not None:
        ax.axvline(lesson.median, color="#c44e52", linestyle="--", linewidth=1.5,
                   label=f"median {lesson.median:g}")
        ax.legend(loc="upper left", frameon=False)
    ax.set_xlabel(f"score (of {lesson.max_score:g}, late penalties taken off)")
    ax.set_ylabel("students")
    ax.set_title(_label(f"{lesson.lesson}: {len(lesson.submissions)} graded"), fontsize=11)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if lesson.max_score <= 20:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.spines[["top", "right"]].set_visible(False)
    return _png(fig)


# The cells figure's bar colours by pass rate (percent): the first band whose bound exceeds it.
RATE_BANDS = {50: ("#c44e52", "under 50%"), 80: ("#dd8452", "50% to 80%"), 101: ("#55a868", "80% or more")}


def _band(rate: float) -> tuple[str, str]:
    return next(band for bound, band in RATE_BANDS.items() if rate < bound)


def cells_figure(report: ClassReport) -> bytes:
    from matplotlib.figure import Figure

    cells = [c for c in report.cells if c.students]
    fig = Figure(figsize=(7.5, 1.0 + 0.3 * max(len(cells), 1)))
    ax = fig.add_subplot()
    from matplotlib.patches import Patch

    rates = [100 * c.pass_rate for c in cells]
    ax.barh(range(len(cells)), rates, color=[_band(r)[0] for r in rates])
    ax.legend(handles=[Patch(color=colour, label=label) for colour, label in RATE_BANDS.values()],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False,
              title="students with full points", title_fontsize=8)
    ax.set_yticks(range(len(cells)), [_label(f"{c.lesson}  {c.grade_id}") for c in cells], fontsize=8)
    for y, c in enumerate(cells):
        ax.text(100 * c.pass_rate + 1, y, f"{c.passed}/{c.students}", va="center", fontsize=8)
    ax.set_xlim(0, 112)
    ax.invert_yaxis()  # the worst at the top
    ax.set_xlabel("students with full points (%)")
    ax.set_title("Grade cells, the least passed first", fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    return _png(fig)


# --- the page ------------------------------------------------------------------------------------
def e(text) -> str:
    """Anything shown in the page, escaped (student ids, messages, flags and notes are student work)."""
    return html.escape(str(text), quote=True)


def _student(name: str) -> str:
    return e(shown(name))


STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em;
       color: #222; }
h1 { margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .8em 0; width: 100%; }
th, td { border-bottom: 1px solid #e3e3e3; padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td { white-space: nowrap; } td.w { white-space: normal; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.meta, .legend { color: #555; } .rate { display: inline-block; width: 6em; background: #eee; }
.rate span { display: block; height: .8em; background: #4c72b0; }
.msg { white-space: pre-wrap; margin: 0 0 .3em; } .type { font-family: monospace; color: #8a4b00; }
.flag { color: #a00; } img { max-width: 100%; } summary { cursor: pointer; }
.who { color: #555; margin: 0 0 .4em 1.2em; }
"""


def page(report: ClassReport) -> str:
    written = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{GENERATOR}\n"
        f"<title>What the class got wrong: {e(report.course_id)}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        "<h1>What the class got wrong</h1>",
        f"<p class=\"meta\">Course {e(report.course_id)}; gradebook {e(report.gradebook)}; "
        f"{len(report.submissions)} graded notebooks in {len(report.lessons)} lesson(s); written {written}.</p>",
        _lessons_table(report), _cells_section(report),
        *[_lesson_section(lesson) for lesson in report.lessons],
        _review_section(report), _timing_section(report), "</body>\n</html>\n",
    ]
    return "\n".join(parts)


def _table(header: list[str], rows: list[str]) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"


def _row(cells: list[str], numeric: set[int] = frozenset(), wrap: set[int] = frozenset()) -> str:
    """A table row; numeric columns align right, wrap columns (messages, flags) break lines."""
    kinds = {**{i: " class=\"n\"" for i in numeric}, **{i: " class=\"w\"" for i in wrap}}
    return "<tr>" + "".join(f"<td{kinds.get(i, '')}>{c}</td>" for i, c in enumerate(cells)) + "</tr>"


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "-"


def _lessons_table(report: ClassReport) -> str:
    rows = []
    for lesson in report.lessons:
        subs = lesson.submissions
        rows.append(_row([
            f"<a href=\"#{e(_file(lesson.lesson))}\">{e(lesson.lesson)}</a>", str(len(subs)),
            str(len(lesson.not_graded)), f"{_points(lesson.median)} / {lesson.max_score:g}",
            str(sum(s.late_penalty > 0 for s in subs)), str(sum(bool(s.flags) for s in subs)),
            _median([s.grade_cell_seconds for s in subs if s.grade_cell_seconds is not None]),
        ], {1, 2, 3, 4, 5, 6}))
    return "<h2>Lessons</h2>\n" + _table(
        ["lesson", "graded", "not graded", "median / points", "late", "flagged", "median seconds in grade cells"],
        rows)


def _failures(cell, limit: int | None) -> str:
    """The cell's failures, most frequent first; with no limit, each opens to who failed so."""
    lines = []
    for f in cell.failures if limit is None else cell.failures[:limit]:
        kind = "msg" if f.verdict else "type"
        text = f"({f.count}) <span class=\"{kind}\">{e(f.message)}</span>"
        if limit is None:
            who = ", ".join(_student(s) for s in f.students)
            lines.append(f"<details><summary>{text}</summary><div class=\"who\">{who}</div></details>")
        else:
            lines.append(f"<div>{text}</div>")
    if limit is not None and len(cell.failures) > limit:
        lines.append(f"<div class=\"legend\">and {len(cell.failures) - limit} other failure(s)</div>")
    return "\n".join(lines) or "-"


def _rate_cell(rate: float | None) -> str:
    if rate is None:
        return "-"
    return f"<span class=\"rate\"><span style=\"width:{100 * rate:.0f}%\"></span></span> {_rate(rate)}"


def _cell_rows(cells, limit: int | None, with_lesson: bool) -> list[str]:
    rows = []
    for c in cells:
        first = [e(c.lesson)] if with_lesson else []
        rows.append(_row(first + [e(c.grade_id), _points(c.points), f"{c.passed}/{c.students}",
                                  _rate_cell(c.pass_rate), _failures(c, limit)],
                         {len(first) + 1, len(first) + 2}, {len(first) + 4}))
    return rows


LEGEND = ("<p class=\"legend\">Passed: full points. Failures as students read them in feedback: a "
          "check's verdict, the student's own exception or a failed public check by its message "
          "(grouped; N stands for numbers that differ between students), an error of a hidden "
          "test's own lines by its <span class=\"type\">type</span> only, since its text may quote "
          "that test. (count) is how many students failed so; in each lesson's table, open a "
          "failure to see who.</p>")


def _cells_section(report: ClassReport) -> str:
    return ("<h2>Grade cells, the least passed first</h2>\n" + LEGEND
            + f"\n<p><img src=\"cells.png\" alt=\"{e(_cells_alt(report))}\"></p>\n<p class=\"legend\">Bar colours: "
            + "; ".join(f"<span style=\"color:{colour}\">&#9632;</span> {label} of the graded students with full "
                        "points" for colour, label in RATE_BANDS.values()) + ".</p>\n"
            + _table(["lesson", "grade cell", "points", "passed", "pass rate", "most frequent failures"],
                     _cell_rows(report.cells, TOP, True))
            + f"\n<p class=\"legend\">The same table: <a href=\"{CSV_NAME}\">{CSV_NAME}</a>.</p>")


def _cells_alt(report: ClassReport) -> str:
    return "Pass rate per grade cell, the least passed first: " + "; ".join(
        f"{c.lesson} {c.grade_id} {_rate(c.pass_rate)}" for c in report.cells if c.students)


def _hist_alt(lesson: Lesson) -> str:
    bins = "; ".join(f"{_bin(b)}: {b.count}" for b in lesson.histogram)
    return f"Score histogram of {lesson.lesson} (students per score): {bins}; median {_points(lesson.median)}"


def _bin(b) -> str:
    if b.high - b.low == 1 and float(b.low + 0.5).is_integer():
        return f"{b.low + 0.5:g}"
    return f"{b.low:g} to {b.high:g}"


def _lesson_section(lesson: Lesson) -> str:
    name = e(lesson.lesson)
    not_graded = ""
    if lesson.not_graded:
        not_graded = (f"<p>Not graded ({len(lesson.not_graded)}: in submitted/ without a score): "
                      + ", ".join(_student(s) for s in lesson.not_graded) + "</p>")
    cells = sorted(lesson.cells, key=lambda c: (c.pass_rate is None, c.pass_rate or 0.0))
    return (f"<section id=\"{e(_file(lesson.lesson))}\">\n<h2>{name}</h2>\n"
            f"<p>{len(lesson.submissions)} graded, median {_points(lesson.median)} of {lesson.max_score:g} points, "
            f"not graded {len(lesson.not_graded)}.</p>\n{not_graded}\n"
            f"<p><img src=\"{e(_file(lesson.lesson))}-scores.png\" alt=\"{e(_hist_alt(lesson))}\"></p>\n"
            + _table(["grade cell", "points", "passed", "pass rate", "every failure"], _cell_rows(cells, None, False))
            + "\n</section>")


def _review_section(report: ClassReport) -> str:
    rows = []
    for s in sorted(report.submissions, key=lambda s: (not s.flags, s.student, s.lesson)):
        if not (s.flags or s.notes or s.late_penalty):
            continue
        rows.append(_row([_student(s.student), e(s.lesson), f"{s.score:g} / {s.max_score:g}",
                          f"-{s.late_penalty:g}" if s.late_penalty else "-",
                          "<br>".join(f"<span class=\"flag\">{e(f)}</span>" for f in s.flags) or "-",
                          "<br>".join(e(n) for n in s.notes) or "-"], {2, 3}, {4, 5}))
    body = _table(["student", "lesson", "score", "late penalty", "evidence flags", "grader's notes"], rows) \
        if rows else "<p>No evidence flag, grader's note or late penalty.</p>"
    if report.strays:
        body += "\n<p>Never graded:</p>\n<ul>\n" + "\n".join(f"<li>{e(s)}</li>" for s in report.strays) + "\n</ul>"
    return ("<h2>For review</h2>\n<p class=\"legend\">Flags are evidence for a human look (what the "
            "student's code did), never a verdict: they changed no score. Scores are nbgrader export's "
            "(the raw score less the late penalty).</p>\n" + body)


def _timing_section(report: ClassReport) -> str:
    rows = []
    for lesson in report.lessons:
        trusted = [s.grade_cell_seconds for s in lesson.submissions if s.grade_cell_seconds is not None]
        whole = [s.seconds for s in lesson.submissions if s.seconds is not None]
        rows.append(_row([e(lesson.lesson), _median(trusted), f"{max(trusted):.1f}" if trusted else "-",
                          _median(whole), f"{max(whole):.1f}" if whole else "-"], {1, 2, 3, 4}))
    every = sorted(report.submissions, key=lambda s: -(s.seconds or s.grade_cell_seconds or 0))
    all_rows = [_row([_student(s.student), e(s.lesson), f"{s.score:g} / {s.max_score:g}",
                      f"{s.raw_score:g}", f"-{s.late_penalty:g}" if s.late_penalty else "-",
                      "-" if s.grade_cell_seconds is None else f"{s.grade_cell_seconds:.1f}",
                      "-" if s.seconds is None else f"{s.seconds:.1f}", e("; ".join(s.flags)) or "-"],
                     {2, 3, 4, 5, 6}, {7}) for s in every]
    header = ["student", "lesson", "score", "raw", "late", "seconds in grade cells", "seconds of the notebook",
              "flags"]
    return ("<h2>Grading time</h2>\n<p class=\"legend\">Seconds in grade cells: the trusted kernel's share, "
            "from each graded notebook; seconds of the notebook: all of it, from grades.csv, for "
            "the notebooks a run graded.</p>\n"
            + _table(["lesson", "seconds in grade cells: median", "max", "seconds per notebook: median", "max"],
                     rows)
            + f"\n<h3>The {min(SLOWEST, len(every))} slowest notebooks</h3>\n" + _table(header, all_rows[:SLOWEST])
            + f"\n<details><summary>Every graded notebook ({len(every)})</summary>\n"
            + _table(header, all_rows) + "\n</details>")


# --- writing -------------------------------------------------------------------------------------
def refuse_target(target: Path) -> None:
    """The report folder may be new, empty, or a report this command wrote; nothing else is replaced."""
    if not target.parent.is_dir():
        raise CourseError(f"report folder {target}: its parent folder {target.parent} does not exist")
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise CourseError(f"report folder {target}: exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not _ours(target):
        raise CourseError(f"report folder {target}: holds files that are not a report of "
                          "'perfcourse report' (name a new or empty folder with --output)")


def _ours(target: Path) -> bool:
    try:
        with open(target / "index.html", encoding="utf-8", errors="replace") as handle:
            return GENERATOR in handle.read(2000)
    except OSError:
        return False


def write_folder(target: Path, files: dict[str, bytes]) -> None:
    """Write the files into a temporary folder beside `target`, then swap it in."""
    refuse_target(target)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    old = None
    try:
        for name, data in files.items():
            (scratch / name).write_bytes(data)
        os.chmod(scratch, 0o755)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.rename(target, old / "report")
        os.rename(scratch, target)
    except BaseException:
        if old is not None and not target.exists():
            os.rename(old / "report", target)
        shutil.rmtree(scratch, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
