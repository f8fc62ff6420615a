"""`perfcourse report` on the graded demo class: the page's numbers are the samples' and nbgrader's.

The class in the demo's course is every sample whose submission is there: the demo's, and the
hostile class's when tests/test_adversarial.py has graded it in the same course first (its
refused submissions are the report's "not graded"). Each sample's `# expect:` line gives its
cells' points, so the histogram counts and every grade cell's pass rate are known without a
number written here; the scores must equal the gradebook's and the demo's grades.csv (nbgrader
export's). Nothing is graded here. The page is also opened in Chromium (skipped without it, as
the browser tests are), which saves test-results/report.png.
"""
from __future__ import annotations

import csv
import io
from collections import Counter

import nbformat
import pytest

from conftest import ROOT, perfcourse
# `browser` is a fixture (tests/jupyter_browser.py): importing it puts it in this module's reach.
from jupyter_browser import browser  # noqa: F401

from perfcourse import nbgrader_bridge
from perfcourse.report import class_report
from perfcourse.samples import discover

pytestmark = [pytest.mark.e2e,  # the graded demo class
              pytest.mark.xdist_group("graded-demo")]  # on the worker that graded it, never graded again

SAMPLES = discover(ROOT) + discover(ROOT, folder="adversarial", prefix="hostile")


@pytest.fixture(scope="module")
def demo_report(graded_demo):
    root, _, grades = graded_demo
    proc = perfcourse("report", cwd=root)
    in_class = [s for s in SAMPLES if nbgrader_bridge.folder(root, "submitted", s.student, s.lesson).is_dir()]
    return root, proc, grades, in_class


def _points(root, lesson: str) -> dict[str, float]:
    """Each grade cell's points, from the instructor's source notebook."""
    nb = nbformat.read(nbgrader_bridge.folder(root, "source", ".", lesson) / f"{lesson}.ipynb", 4)
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def test_the_report_says_what_the_samples_expect_and_nbgrader_recorded(demo_report):
    root, proc, grades, in_class = demo_report
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = root / "report"
    report = class_report.collect(root)
    lessons = sorted({s.lesson for s in in_class})
    assert [lesson.lesson for lesson in report.lessons] == lessons  # every lesson of the class

    page = (folder / "index.html").read_text(encoding="utf-8")
    rows = {(r["lesson"], r["grade_id"]): r
            for r in csv.DictReader(io.StringIO((folder / "cells.csv").read_bytes().decode("utf-8")))}
    demo_rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(io.StringIO(grades))}
    for lesson in report.lessons:
        graded = [s for s in in_class if s.lesson == lesson.lesson and s.expected is not None]
        assert sorted(s.student for s in lesson.submissions) == sorted(s.student for s in graded)
        assert lesson.not_graded == sorted(s.student for s in in_class
                                           if s.lesson == lesson.lesson and s.expected is None)
        # The histogram: students per score, from the samples' expectations.
        expected = Counter(sum(s.expected.values()) for s in graded)
        last = len(lesson.histogram) - 1
        assert [b.count for b in lesson.histogram] == [
            sum(n for score, n in expected.items() if b.low <= score < b.high or (i == last and score == b.high))
            for i, b in enumerate(lesson.histogram)]
        assert sum(b.count for b in lesson.histogram) == len(graded)
        assert f'id="{lesson.lesson}"' in page and f'src="{lesson.lesson}-scores.png"' in page
        assert (folder / f"{lesson.lesson}-scores.png").is_file()
        # Every grade cell's pass rate: full points as the sample expects them.
        points = _points(root, lesson.lesson)
        assert {c.grade_id: c.points for c in lesson.cells} == points
        for cell in lesson.cells:
            passed = sum(s.expected[cell.grade_id] == points[cell.grade_id] for s in graded)
            assert (cell.students, cell.passed) == (len(graded), passed), cell.grade_id
            assert sum(f.count for f in cell.failures) == len(graded) - passed
            row = rows[(lesson.lesson, cell.grade_id)]
            assert (int(row["students"]), int(row["passed"])) == (len(graded), passed)
        # Scores: the samples', the gradebook's, and nbgrader export's as the demo's grades.csv has them.
        by_student = {s.student: s for s in graded}
        for sub in lesson.submissions:
            sample = by_student[sub.student]
            assert sub.cells == sample.expected
            assert sub.raw_score == sum(sample.expected.values()) == sub.score  # no late penalty in the demo
            demo = demo_rows.get((sub.student, sub.lesson))
            if demo is not None:  # a demo student (not a hostile one graded later)
                assert (sub.score, sub.raw_score, sub.late_penalty, sub.max_score) == (
                    float(demo["score"]), float(demo["raw_score"]),
                    float(demo["late_submission_penalty"]), float(demo["max_score"]))
            assert sub.grade_cell_seconds is not None and sub.grade_cell_seconds > 0
    assert len(rows) == sum(len(lesson.cells) for lesson in report.lessons)
    student = report.lessons[0].submissions[0]
    score = nbgrader_bridge.notebook_score(root, student.lesson, student.student)  # the gradebook, on its own
    assert (student.cells, student.raw_score) == (score.cells, score.score)


def test_the_page_opens_in_chromium(demo_report, browser, tmp_path):  # noqa: F811 (the pytest fixture)
    from jupyter_browser import keep_screenshot

    root = demo_report[0]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    outside = []
    page.on("request", lambda request: outside.append(request.url)
            if not request.url.startswith(("file:", "data:")) else None)
    page.goto((root / "report" / "index.html").as_uri())
    assert page.title().startswith("What the class got wrong")
    images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.getAttribute('src'), i.naturalWidth])")
    assert images and all(width > 0 for _, width in images), images
    assert outside == []  # self-contained: nothing but the folder's own files
    keep_screenshot(page, tmp_path, "report.png")


def test_no_failure_of_the_demo_hides_what_the_student_did(demo_report):
    """Every failure of a demo sample names the student's mistake: no channel stand-in
    (PeerException) or channel frame in a graded notebook, no bare error type in the report."""
    root = demo_report[0]
    report = class_report.collect(root)
    failures = [failure for cell in report.cells for failure in cell.failures
                if any(s.startswith("sample-") for s in failure.students)]
    assert failures  # the demo's wrong samples fail cells: the loop below reads them
    for failure in failures:
        assert failure.verdict or failure.message == class_report.NO_ERROR, failure
        assert "PeerException" not in failure.message
    graded = sorted(nbgrader_bridge.step(root, "autograded").glob("sample-*/*/*.ipynb"))
    assert graded
    for path in graded:
        for cell in nbformat.read(path, 4).cells:
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    assert out["ename"] != "PeerException", path
                    assert not any("perfcourse/checks/remote.py" in line for line in out["traceback"]), path
