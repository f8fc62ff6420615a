"""What the class got wrong, as data: scores, grade cells and failures, from nbgrader's records.

`collect` reads, for each lesson, the gradebook (through nbgrader's Gradebook API and its CSV
export plugin, by way of nbgrader_bridge: SQLite or PostgreSQL alike, no SQL of ours), the
autograded notebooks (each grade cell's error output, the grader's notes, evidence flags and
timing record, written by whichever machine graded them, a Dask worker's included) and, when
present, grades.csv (each notebook's seconds in the `perfcourse grade` run that last graded it).
The page and its figures are drawn from this by report/page.py.

A grade cell is passed with full points. A failure is grouped by what feedback shows the
student (grading/cell_error.py): a check's verdict, the student's own exception or a failed
public check by its message, numbers aside; any other error by its type only, since its text may
quote a hidden test. Strings here come from student work (ids, messages, flags): whoever shows them escapes them.
"""
from __future__ import annotations

import csv
import os
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .. import nbgrader_bridge as nbgrader
from ..course import CourseError
from ..course import lessons as course_lessons
from ..grading import losses, run
from ..grading.cell_error import shown
from . import grade_table

NO_ERROR = "(no error output: the cell earned part of its points, or did not run)"
NO_NOTEBOOK = "(no autograded notebook)"
# A number standing alone (not part of a word such as float32): where messages differ only in
# these, they are one failure.
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
NUMBER_LIST = re.compile(r"\[N(?:, N)*\]")


@dataclass
class Failure:
    """One way a grade cell failed, and who failed it so."""
    message: str  # what feedback shows (numbers as N where they differ), or an error's type
    verdict: bool  # True: a message students read (grading/cell_error.py); False: the error's type only
    students: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.students)


@dataclass
class Cell:
    lesson: str
    grade_id: str
    points: float
    students: int = 0  # graded submissions
    passed: int = 0  # of those, with full points
    failures: list[Failure] = field(default_factory=list)  # most frequent first

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.students if self.students else None


@dataclass
class Submission:
    student: str
    lesson: str
    score: float  # nbgrader export's: the raw score less the late penalty, never below 0
    max_score: float
    raw_score: float
    late_penalty: float
    timestamp: str
    cells: dict[str, float]  # grade_id -> points, from the gradebook
    grade_cell_seconds: float | None = None  # the trusted kernel's share (execute.TIMING_KEY)
    seconds: float | None = None  # the whole notebook, from grades.csv when its last run graded it
    flags: list[str] = field(default_factory=list)  # evidence for review, not a verdict
    notes: list[str] = field(default_factory=list)  # grader-made failures (run.notes_of)


@dataclass
class Bin:
    low: float  # low <= score < high; the last bin holds its high end too
    high: float
    count: int


@dataclass
class Lesson:
    lesson: str
    max_score: float
    cells: list[Cell]  # as the gradebook lists them
    submissions: list[Submission]
    not_graded: list[str]  # students with a submission in submitted/ and no score

    @property
    def scores(self) -> list[float]:
        return [s.score for s in self.submissions]

    @property
    def median(self) -> float | None:
        return statistics.median(self.scores) if self.submissions else None

    @property
    def histogram(self) -> list[Bin]:
        return histogram(self.scores, self.max_score)


@dataclass
class ClassReport:
    course_id: str
    gradebook: str  # where it is (a PostgreSQL URL without its password)
    lessons: list[Lesson]
    strays: list[str] = field(default_factory=list)  # submission folders that are no lesson: never graded

    @property
    def cells(self) -> list[Cell]:
        """Every grade cell of every lesson, the least passed first (cells nobody was graded on last)."""
        return sorted((c for lesson in self.lessons for c in lesson.cells),
                      key=lambda c: (c.pass_rate is None, c.pass_rate or 0.0, -c.students, c.lesson, c.grade_id))

    @property
    def submissions(self) -> list[Submission]:
        return [s for lesson in self.lessons for s in lesson.submissions]


def histogram(scores: list[float], max_score: float) -> list[Bin]:
    """One bin per point (centred on it) up to 20 points, else ten equal bins from 0 to the maximum;
    a bin holds low <= score < high, the last one its high end too."""
    if max_score <= 20:
        edges = [k - 0.5 for k in range(int(max_score) + 2)]
        if edges[-1] < max_score:
            edges.append(edges[-1] + 1)
    else:
        edges = [max_score * k / 10 for k in range(11)]
    bins = [Bin(low, high, 0) for low, high in zip(edges, edges[1:])]
    for score in scores:
        score = min(max(score, edges[0]), edges[-1])  # extra credit counts in the top bin
        next(b for b in bins if b.low <= score < b.high or b is bins[-1]).count += 1
    return bins


def failure_of(cell) -> tuple[str, bool]:
    """What feedback shows for a failed grade cell (grading/cell_error.py): a check's verdict, the
    student's own exception or a public check's message (True), or the error's type only (False)."""
    found = shown(cell)
    if found is None:
        return NO_ERROR, False
    kind, text = found
    return text, kind != "type"


def group(failed: list[tuple[str, str, bool]]) -> list[Failure]:
    """(student, message, verdict) -> failures, most frequent first. Verdicts that differ only in
    their numbers (a call's index, a measured time) are one failure, shown with N for them."""
    groups: dict[tuple[str, bool], list[tuple[str, str]]] = {}
    for student, message, verdict in failed:
        key = NUMBER_LIST.sub("[N...]", NUMBER.sub("N", message)) if verdict else message
        groups.setdefault((key, verdict), []).append((student, message))
    found = []
    for (key, verdict), members in groups.items():
        variants = Counter(message for _, message in members)
        found.append(Failure(variants.most_common(1)[0][0] if len(variants) == 1 else key, verdict,
                             sorted(student for student, _ in members)))
    return sorted(found, key=lambda f: (-f.count, f.message))


def collect(root: Path, lessons: list[str] | None = None) -> ClassReport:
    """The class as nbgrader recorded it, for these lessons (default: every lesson of source/ in
    the gradebook). Raises CourseError naming what is wrong: no gradebook, a lesson it lacks,
    nothing submitted."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    loaded = nbgrader.config(root)
    directory = nbgrader.coursedir(root, loaded)
    url = make_url(directory.db_url)
    where = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite" and not (url.database and Path(url.database).is_file()):
        raise CourseError(f"no gradebook at {url.database}: nothing has been released or graded in "
                          f"{root} yet (perfcourse release, perfcourse grade)")
    try:
        chosen, graded = _gradebook(root, lessons, where)
        students = sorted({s for _, scored in graded.values() for s in scored})
        exported = nbgrader.export(root, chosen, students) if students else {}
    except SQLAlchemyError as exc:
        raise CourseError(f"cannot read the gradebook at {where}: {str(exc).splitlines()[0]}") from None
    timed = _grades_csv_seconds(root)
    report = ClassReport(directory.course_id, where, [
        _lesson(root, loaded, lesson, *graded[lesson], exported, timed) for lesson in chosen])
    report.strays = losses.stray_notes(nbgrader.step(root, "submitted", loaded), course_lessons(root))
    if not any(lesson.submissions or lesson.not_graded for lesson in report.lessons):
        raise CourseError(f"no submissions of {', '.join(chosen)} in the gradebook ({where}) or in "
                          f"{nbgrader.step(root, 'submitted', loaded)}: nothing to report")
    return report


def _gradebook(root: Path, lessons: list[str] | None, where: str):
    """The lessons chosen, and for each its grade cells [(grade_id, points)] and its scores
    {student: {grade_id: points}}, through nbgrader's Gradebook API."""
    from nbgrader.api import MissingEntry

    with nbgrader.gradebook(root) as gb:
        known = {a.name for a in gb.assignments}
        missing = [lesson for lesson in lessons or [] if lesson not in known]
        if missing:
            raise CourseError(f"{', '.join(missing)} not in the gradebook ({where}): release and grade it first")
        chosen = list(dict.fromkeys(lessons)) if lessons else [name for name in course_lessons(root) if name in known]
        if not chosen:
            raise CourseError(f"no lesson of source/ is in the gradebook ({where}): release and grade first")
        graded = {}
        for lesson in chosen:
            try:
                notebook = gb.find_notebook(lesson, lesson)
            except MissingEntry:
                raise CourseError(f"{lesson}: the gradebook ({where}) has no notebook {lesson}.ipynb "
                                  "(perfcourse release records it)") from None
            cells = [(c.name, float(c.max_score)) for c in notebook.grade_cells]
            scored = {nb.student.id: {g.name: float(g.score) for g in nb.grades}
                      for nb in gb.notebook_submissions(lesson, lesson)}
            graded[lesson] = cells, scored
    return chosen, graded


def _lesson(root, loaded, lesson, cells, scored, exported, timed) -> Lesson:
    stats = {name: Cell(lesson, name, points) for name, points in cells}
    releases: dict = {}
    failed: dict[str, list[tuple[str, str, bool]]] = {name: [] for name, _ in cells}
    submissions = []
    for student in sorted(scored):
        nb = _autograded(nbgrader.folder(root, "autograded", student, lesson, loaded) / f"{lesson}.ipynb")
        submissions.append(_submission(student, lesson, scored[student], exported[(student, lesson)], nb,
                                       timed.get((student, lesson))))
        if nb is not None:  # what the notebook lost against its release, beside the grader's notes
            submissions[-1].notes += run.lost_cells(root, lesson, nb, releases)
        outputs = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells
                   if c.metadata.get("nbgrader", {}).get("grade")} if nb is not None else {}
        for name, points in cells:
            stats[name].students += 1
            if scored[student].get(name, 0.0) >= points:
                stats[name].passed += 1
            else:
                message, verdict = failure_of(outputs[name]) if name in outputs else (NO_NOTEBOOK, False)
                failed[name].append((student, message, verdict))
    for name, cell in stats.items():
        cell.failures = group(failed[name])
    return Lesson(lesson, sum(points for _, points in cells), list(stats.values()), submissions,
                  _not_graded(root, loaded, lesson, set(scored)))


def _autograded(path: Path):
    try:
        return nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - scored, but its notebook is gone or unreadable: the scores still count
        return None


def _submission(student, lesson, cells, row, nb, seconds) -> Submission:
    """One graded notebook: nbgrader export's row, the gradebook's cells, the notebook's records."""
    from ..grading.execute import TIMING_KEY

    record = nb.metadata.get(TIMING_KEY) if nb is not None else None
    trusted = record.get("grade_cell_seconds") if isinstance(record, dict) else None
    return Submission(student, lesson, float(row["score"]), float(row["max_score"]), float(row["raw_score"]),
                      float(row["late_submission_penalty"] or 0), row["timestamp"], cells,
                      float(trusted) if isinstance(trusted, (int, float)) else None, seconds,
                      run.flags_of(nb) if nb is not None else [], run.notes_of(nb) if nb is not None else [])


def _not_graded(root: Path, loaded, lesson: str, graded: set[str]) -> list[str]:
    """Students whose submitted/<student>/<lesson> is there (a folder, or a link grading refused)
    with no score in the gradebook. Nothing is followed."""
    submitted = nbgrader.step(root, "submitted", loaded)
    if not submitted.is_dir():
        return []
    found = []
    with os.scandir(submitted) as entries:
        for entry in entries:
            if entry.name in graded or not entry.is_dir(follow_symlinks=False):
                continue
            where = Path(entry.path) / lesson
            if where.is_symlink() or where.is_dir():
                found.append(entry.name)
    return sorted(found)


def _grades_csv_seconds(root: Path) -> dict[tuple[str, str], float]:
    """(student, lesson) -> seconds, for the notebooks grades.csv says its run graded ('now')."""
    seconds = {}
    try:
        found = grade_table.read_rows(root / "grades.csv")
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    for row in found:
        if row.get("graded") == "now":
            try:
                seconds[(row["student_id"], row["assignment"])] = float(row["seconds"])
            except (KeyError, TypeError, ValueError):
                continue
    return seconds
