"""`perfcourse report` on a small synthetic class made with nbgrader's own API: no kernel runs.

One lesson of two grade cells (3 and 2 points) and six students: alice passes both; bob and
carol fail the first with the same check verdict but for different call numbers (one failure,
with N for the number), bob submitted late (nbgrader's penalty, taken off as its export takes it
off); carol fails the second with a NameError whose text must never show (only its type); a
student whose id is HTML fails with a verdict that is HTML and carries an HTML evidence flag;
erin earns part of the second cell's points, with no error shown, having deleted her solution cell
and the second test cell (nbgrader put it back); dave's submission is in
submitted/ with no score, beside a folder that is no lesson (performance-99, never graded). A
second lesson is in the gradebook with nobody graded. The same class on a PostgreSQL gradebook
gives the same report (e2e: it starts a PostgreSQL server).
"""
from __future__ import annotations

import csv
import io
import warnings
from datetime import datetime

import nbformat
import pytest
from sqlalchemy.exc import SAWarning

from conftest import ROOT

from perfcourse import cli, nbgrader_bridge
from perfcourse.course import CONFIG_FILES, CourseError, copy_course
from perfcourse.report import class_report
from perfcourse.report import page as class_report_page
from perfcourse.grading.execute import TIMING_KEY
from perfcourse.kernel.evidence import EVIDENCE_KEY

LESSON, EMPTY = "performance-01", "performance-02"
CELLS = {"test_timer": 3.0, "test_intensity": 2.0}
HTML_ID = "<img src=x onerror=alert(1)>"
HIDDEN = "name 'hidden_reference_1234' is not defined"  # a hidden test's detail: must never be shown
XSS = '<script>alert("verdict")</script> the timer reads the clock too early'


def verdict(text):
    return {"ename": "CheckFailed", "evalue": text, "traceback": []}


# student -> (points per cell, the error output of each failed cell, late penalty, flags)
CLASS = {
    "alice": ({"test_timer": 3, "test_intensity": 2}, {}, 0.0, []),
    "bob": ({"test_timer": 0, "test_intensity": 2},
            {"test_timer": verdict("the clock was read before the result of call 3 was ready: wait for it")},
            1.0, []),
    "carol": ({"test_timer": 0, "test_intensity": 0},
              {"test_timer": verdict("the clock was read before the result of call 5 was ready: wait for it"),
               "test_intensity": {"ename": "NameError", "evalue": HIDDEN, "traceback": [HIDDEN]}},
              0.0, ["assigned __code__ (once)"]),
    HTML_ID: ({"test_timer": 0, "test_intensity": 2}, {"test_timer": verdict(XSS)}, 0.0,
              ["<b>code iterates sys.modules</b> (cell 4)"]),
    "erin": ({"test_timer": 3, "test_intensity": 1}, {}, 0.0, []),
}
NOT_GRADED = ["dave"]
STRAY = "performance-99"  # a folder of dave's that is no lesson


def synthetic_course(root, db_url=None):
    """The class above, through nbgrader's Gradebook API, with the autograded notebooks beside it."""
    copy_course(ROOT, root, CONFIG_FILES)
    if db_url:
        with open(root / "grader_config.py", "a", encoding="utf-8") as handle:
            handle.write(f"\nc.CourseDirectory.db_url = {db_url!r}\n")
    for lesson in (LESSON, EMPTY):  # course.lessons() reads source/
        folder = nbgrader_bridge.folder(root, "source", ".", lesson)
        folder.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(), folder / f"{lesson}.ipynb")
    with nbgrader_bridge.gradebook(root) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's add_submission, as in every autograde
        for lesson, cells in ((LESSON, CELLS), (EMPTY, {"test_only": 4.0})):
            gb.add_assignment(lesson, duedate=datetime(2026, 11, 1, 12))
            gb.add_notebook(lesson, lesson)
            for name, points in cells.items():
                gb.add_grade_cell(name, lesson, lesson, max_score=points, cell_type="code")
        for student, (points, errors, penalty, flags) in CLASS.items():
            gb.add_student(student)
            gb.add_submission(LESSON, student, timestamp=datetime(2026, 11, 1, 13 if penalty else 11))
            for name, score in points.items():
                grade = gb.find_grade(name, LESSON, LESSON, student)
                grade.auto_score, grade.needs_manual_grade = float(score), False
            gb.find_submission_notebook(LESSON, LESSON, student).late_submission_penalty = penalty
            gb.db.commit()
            _autograded(root, student, errors, flags)
    for student in NOT_GRADED:
        nbgrader_bridge.folder(root, "submitted", student, LESSON).mkdir(parents=True)
    nbgrader_bridge.folder(root, "submitted", "dave", STRAY).mkdir(parents=True)
    released = nbgrader_bridge.folder(root, "release", ".", LESSON)
    released.mkdir(parents=True)
    nbformat.write(_notebook(solution=True), released / f"{LESSON}.ipynb")
    (root / "grades.csv").write_text(
        "assignment,student_id,graded,seconds\n"
        f"{LESSON},alice,now,4.25\n{LESSON},bob,before,0.0\n", encoding="utf-8")
    return root


def _notebook(solution: bool, put_back: tuple[str, ...] = ()):
    """The lesson's cells: a solution cell (where kept), then its grade cells (those put back as
    nbgrader marks them)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    if solution:
        nb.cells[0].metadata["nbgrader"] = {"grade": False, "grade_id": "timer", "locked": False,
                                            "schema_version": 3, "solution": True}
    for name in CELLS:
        notice = f"# This cell (id:{name}) was missing from the submission. It was added back by nbgrader.\n\n"
        cell = nbformat.v4.new_code_cell((notice if name in put_back else "") + f"check_{name}()")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": name, "points": CELLS[name], "schema_version": 3,
                                     "locked": True, "solution": False}
        nb.cells.append(cell)
    return nb


def _autograded(root, student, errors, flags):
    nb = _notebook(solution=student != "erin", put_back=("test_intensity",) if student == "erin" else ())
    for cell in nb.cells[1:]:
        name = cell.metadata["nbgrader"]["grade_id"]
        if name in errors:
            cell.outputs = [nbformat.v4.new_output("error", **errors[name])]
    nb.metadata[EVIDENCE_KEY] = flags
    nb.metadata[TIMING_KEY] = {"grade_cell_seconds": 1.5, "grade_cells": 2}
    folder = nbgrader_bridge.folder(root, "autograded", student, LESSON)
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{LESSON}.ipynb")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return synthetic_course(tmp_path_factory.mktemp("report") / "course")


@pytest.fixture(scope="module")
def report(course):
    return class_report.collect(course)


@pytest.fixture(scope="module")
def written(course, tmp_path_factory):
    output = tmp_path_factory.mktemp("out") / "report"
    assert class_report_page.main(course, None, output) == 0
    return output


def test_scores_are_nbgraders_late_penalty_included(course, report):
    lesson = report.lessons[0]
    assert [lesson.lesson for lesson in report.lessons] == [LESSON, EMPTY]
    subs = {s.student: s for s in lesson.submissions}
    assert sorted(subs) == sorted(CLASS)
    exported = nbgrader_bridge.export(course, [LESSON], sorted(CLASS))
    for student, s in subs.items():
        row = exported[(student, LESSON)]
        assert (s.score, s.raw_score, s.late_penalty) == (float(row["score"]), float(row["raw_score"]),
                                                          float(row["late_submission_penalty"]))
        assert s.cells == {name: float(points) for name, points in CLASS[student][0].items()}
    assert (subs["bob"].raw_score, subs["bob"].late_penalty, subs["bob"].score) == (2, 1, 1)
    assert lesson.max_score == 5 and sorted(lesson.scores) == [0, 1, 2, 4, 5]
    assert lesson.median == 2
    assert [(b.low + 0.5, b.count) for b in lesson.histogram] == [(0, 1), (1, 1), (2, 1), (3, 0), (4, 1), (5, 1)]
    assert lesson.not_graded == NOT_GRADED


def test_pass_rates_count_full_points_only(report):
    cells = {c.grade_id: c for c in report.lessons[0].cells}
    assert (cells["test_timer"].students, cells["test_timer"].passed) == (5, 2)  # alice, erin
    assert (cells["test_intensity"].students, cells["test_intensity"].passed) == (5, 3)  # erin's 1 of 2 is no pass
    assert cells["test_timer"].pass_rate == pytest.approx(0.4)
    empty = report.lessons[1]
    assert empty.submissions == [] and empty.median is None and empty.cells[0].pass_rate is None
    # Worst first; a cell nobody was graded on comes last.
    assert [(c.lesson, c.grade_id) for c in report.cells] == [
        (LESSON, "test_timer"), (LESSON, "test_intensity"), (EMPTY, "test_only")]


def test_failures_are_grouped_verdicts_and_types_only(report):
    cells = {c.grade_id: c for c in report.lessons[0].cells}
    timer = cells["test_timer"].failures
    assert [(f.message, f.verdict, f.students) for f in timer] == [
        ("the clock was read before the result of call N was ready: wait for it", True, ["bob", "carol"]),
        (XSS, True, [HTML_ID]),
    ]
    intensity = cells["test_intensity"].failures
    assert [(f.message, f.verdict, f.count) for f in intensity] == [
        (class_report.NO_ERROR, False, 1), ("NameError", False, 1)]


def test_one_variant_keeps_its_numbers_and_lists_of_numbers_group():
    failures = class_report.group([("a", "calls [2, 4] are short (call 1 is the first)", True),
                                   ("b", "calls [1] are short (call 1 is the first)", True),
                                   ("c", "bfloat16 operands: 3e-02 apart", True)])
    assert [(f.message, f.count) for f in failures] == [
        ("calls [N...] are short (call N is the first)", 2), ("bfloat16 operands: 3e-02 apart", 1)]


def test_the_page_escapes_student_work_and_hides_other_errors_text(written):
    page = (written / "index.html").read_text(encoding="utf-8")
    for raw in ("<script>", HTML_ID, "<b>code iterates"):
        assert raw not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;script&gt;alert(&quot;verdict&quot;)" in page
    assert "&lt;b&gt;code iterates sys.modules&lt;/b&gt; (cell 4)" in page  # flags, for review
    assert "assigned __code__ (once)" in page
    assert "hidden_reference_1234" not in page and "hidden_reference_1234" not in (written / "cells.csv").read_text()
    assert "<script" not in page.lower() and "http" not in page  # self-contained, no script
    assert "dave" in page and "-1" in page  # not graded; bob's late penalty


def test_a_deleted_solution_and_test_cell_are_a_note_each(report, written):
    notes = {s.student: s.notes for s in report.lessons[0].submissions}
    assert notes.pop("erin") == [
        "solution cell timer (task 1) lost: it was deleted, so the tests that use its code lose their points",
        "test cell test_intensity was missing: nbgrader put it back from the release and graded it"]
    assert not any(notes.values())
    page = (written / "index.html").read_text(encoding="utf-8")
    assert "solution cell timer (task 1) lost: it was deleted" in page and "test cell test_intensity was" in page


def test_a_folder_that_is_no_lesson_is_named(report, written):
    note = (f"submitted/dave/{STRAY}/ is no lesson of the course, so it was not graded "
            f"(the lessons: {LESSON}, {EMPTY})")
    assert report.strays == [note]
    assert f"<li>{note}</li>" in (written / "index.html").read_text(encoding="utf-8")


def test_the_folder_holds_the_page_its_figures_and_the_csv(written, report):
    assert sorted(p.name for p in written.iterdir()) == sorted(
        ["index.html", "cells.csv", "cells.png", f"{LESSON}-scores.png", f"{EMPTY}-scores.png"])
    page = (written / "index.html").read_text(encoding="utf-8")
    for name in ("cells.png", f"{LESSON}-scores.png", f"{EMPTY}-scores.png"):
        assert (written / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f'src="{name}"' in page
    assert f"Score histogram of {LESSON} (students per score): 0: 1; 1: 1; 2: 1; 3: 0; 4: 1; 5: 1; median 2" in page
    rows = list(csv.DictReader(io.StringIO((written / "cells.csv").read_text(encoding="utf-8"))))
    assert list(rows[0]) == list(class_report_page.CSV_COLUMNS)
    assert [(r["lesson"], r["grade_id"], r["points"], r["students"], r["passed"], r["pass_rate"]) for r in rows] == [
        (LESSON, "test_timer", "3", "5", "2", "0.4000"), (LESSON, "test_intensity", "2", "5", "3", "0.6000"),
        (EMPTY, "test_only", "4", "0", "0", "")]
    assert rows[0]["top_messages"] == ("(2) the clock was read before the result of call N was ready: wait for it"
                                       f" | (1) {XSS}")
    assert rows[1]["top_messages"] == f"(1) {class_report.NO_ERROR} | (1) NameError"


def test_grading_time_comes_from_the_notebooks_and_grades_csv(report):
    subs = {s.student: s for s in report.lessons[0].submissions}
    assert subs["alice"].grade_cell_seconds == 1.5 and subs["alice"].seconds == 4.25
    assert subs["bob"].seconds is None  # grades.csv's last run did not grade it ('before')
    assert subs["carol"].flags == ["assigned __code__ (once)"]


def test_a_report_is_replaced_whole_and_nothing_else_is(course, tmp_path, monkeypatch):
    output = tmp_path / "report"
    assert class_report_page.main(course, [LESSON], output) == 0
    first = sorted(p.name for p in output.iterdir())
    assert first == sorted(["index.html", "cells.csv", "cells.png", f"{LESSON}-scores.png"])

    def broken(lesson):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(class_report_page, "scores_figure", broken)
    with pytest.raises(RuntimeError):
        class_report_page.main(course, None, output)
    assert sorted(p.name for p in output.iterdir()) == first  # the old report, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary folder left
    monkeypatch.undo()

    assert class_report_page.main(course, None, output) == 0  # our own report: replaced
    assert (output / f"{EMPTY}-scores.png").is_file()
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep")
    with pytest.raises(CourseError, match="not a report of 'perfcourse report'"):
        class_report_page.main(course, None, foreign)
    assert [p.name for p in foreign.iterdir()] == ["mine.txt"]


@pytest.mark.parametrize("args, message", [
    (["--lesson", "performance-03"], "unknown lesson 'performance-03'"),
    (["--output", "{course}/grader_config.py"], "exists and is not a folder"),
    (["--output", "{course}/missing/report"], "its parent folder"),
])
def test_bad_input_is_one_clear_error(course, monkeypatch, capsys, args, message):
    monkeypatch.setenv("PERFCOURSE_ROOT", str(course))
    assert cli.main(["report", *[a.format(course=course) for a in args]]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (course / "report").exists()


def test_no_gradebook_a_lesson_it_lacks_or_nothing_submitted_is_named(tmp_path):
    bare = copy_course(ROOT, tmp_path / "bare", CONFIG_FILES)
    with pytest.raises(CourseError, match="no gradebook at .*gradebook.db"):
        class_report.collect(bare)
    assert not (bare / "gradebook.db").exists()  # reading never creates one
    folder = nbgrader_bridge.folder(bare, "source", ".", EMPTY)
    folder.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), folder / f"{EMPTY}.ipynb")
    with nbgrader_bridge.gradebook(bare) as gb:
        gb.add_assignment(EMPTY)
        gb.add_notebook(EMPTY, EMPTY)
    with pytest.raises(CourseError, match="performance-05 not in the gradebook"):
        class_report.collect(bare, ["performance-05"])
    with pytest.raises(CourseError, match=f"no submissions of {EMPTY} in the gradebook"):
        class_report.collect(bare)


@pytest.mark.e2e  # starts a PostgreSQL server
def test_a_postgresql_gradebook_gives_the_same_report(tmp_path, report, written):
    from cluster_services import postgres_bin, postgresql

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed here (.ci/run installs it: apt-get install postgresql)")
    with postgresql() as url:
        course = synthetic_course(tmp_path / "course", url)
        assert not (course / "gradebook.db").exists()
        on_postgres = class_report.collect(course)
        assert on_postgres.gradebook.startswith("postgresql://")
        assert class_report_page.cells_csv(on_postgres) == (written / "cells.csv").read_bytes().decode("utf-8")
        assert [(s.student, s.score, s.late_penalty) for s in on_postgres.submissions] == \
            [(s.student, s.score, s.late_penalty) for s in report.submissions]


def test_the_bar_colours_have_a_legend_and_the_columns_say_what_they_count(written):
    page = (written / "index.html").read_text(encoding="utf-8")
    assert "Bar colours:" in page
    for colour, label in class_report_page.RATE_BANDS.values():
        assert f"color:{colour}" in page and label in page
    assert [class_report_page._band(rate)[1] for rate in (0, 49.9, 50, 79.9, 80, 100)] == [
        "under 50%", "under 50%", "50% to 80%", "50% to 80%", "80% or more", "80% or more"]
    assert "grade-cell s" not in page and "median seconds in grade cells" in page
    assert "seconds in grade cells: median" in page and "seconds per notebook: median" in page
