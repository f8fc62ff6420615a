"""The adversarial catalogue: hostile submissions graded in one class beside honest ones.

Each file in adversarial/<lesson>/ says what its submission deserves (`# expect:`) and what the
report must say about it (`# reason:`). Honest samples graded in the same class must score
exactly what they score alone (tests/test_grading.py), and the gradebook must stay intact.
"""
import csv
import sqlite3
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT, perfcourse

from perfcourse import samples
from perfcourse.nbgrader_bridge import notebook_score
from perfcourse.nbgrader_bridge import nbgrader_env

pytestmark = [pytest.mark.e2e,  # kernels, graded classes or executed notebooks (make test, not make check)
              pytest.mark.xdist_group("graded-demo")]  # graded in the demo's course, on the demo's worker

# Entries marked '# tier: nightly' (most of them wait out a limit) are graded by the nightly tier
# (tests/test_under_load.py grades the whole catalogue), not here; those marked '# tier: demo' are
# graded, scored and their reasons read in the quick demo's class (tests/test_grading.py), not again.
HOSTILE = [s for s in samples.discover(ROOT, folder="adversarial", prefix="hostile") if not s.nightly and not s.demo]
# The hostile class is graded in the demo's course, after the demo (tests/test_grading.py proves
# every honest sample there). These honest performance-01 students, one correct and one wrong, are
# graded again beside the hostile ones, at the same time.
HONEST_CASES = ("alternative", "unsynchronized")  # graded by the quick demo too
HONEST = [s for s in samples.discover(ROOT, ["performance-01"]) if s.case in HONEST_CASES]


CANARIES = ("canary-beside.txt", "../canary-above.txt")


@pytest.fixture(scope="module")
def hostile_class(graded_demo):
    root = graded_demo[0]  # released, and the whole sample class graded
    for canary in CANARIES:  # files beside and above the course that no grading may touch
        (root / canary).write_text("canary\n")
    samples.write_submissions(root, HOSTILE)
    students = sorted({s.student for s in HOSTILE + HONEST})
    lessons = sorted({s.lesson for s in HOSTILE + HONEST})
    # The cell limit leaves room for forks-and-memory's cell (about 6 s alone) while the end-to-end tier's
    # other worker shares the cores; the two submissions that never finish a cell wait it out.
    proc = perfcourse("grade", "--cell-timeout", "20", "--workers", "2", "--force",
                      *[a for lesson in lessons for a in ("--lesson", lesson)],
                      *[a for student in students for a in ("--student", student)], cwd=root)
    with open(root / "grades.csv") as handle:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(handle)}
    return root, proc, rows


def test_the_class_is_graded_and_the_refused_submissions_are_named(hostile_class):
    _, proc, rows = hostile_class
    refused = [s for s in HOSTILE if s.expected is None]
    assert proc.returncode == 1, "grading must fail loudly when a submission cannot be graded"
    for sample in refused:
        assert f"NOT GRADED {sample.student}/{sample.lesson}:" in proc.stdout
    # The honest students' other lessons and the demo's own hostile entries (graded by the demo) are in
    # view too: only these were graded now.
    demo = {(s.student, s.lesson) for s in samples.discover(ROOT, folder="adversarial", prefix="hostile")
            if s.demo and not s.nightly}
    assert {key for key in rows if key[0].startswith("hostile")} - demo == {(s.student, s.lesson) for s in HOSTILE}
    assert all((s.student, s.lesson) in rows for s in HONEST)


@pytest.mark.parametrize("sample", HOSTILE, ids=lambda s: f"{s.lesson}/{s.case}")
def test_each_hostile_submission_gets_what_it_deserves(hostile_class, sample):
    root, _, rows = hostile_class
    row = rows[(sample.student, sample.lesson)]
    score = notebook_score(root, sample.lesson, sample.student)
    if sample.expected is None:
        assert score is None and row["error"], f"{sample.case} should have been refused"
    else:
        assert score is not None, f"{sample.case} was not graded: {row['error']}"
        assert score.cells == sample.expected, f"{sample.case}: {score.cells}"
        assert score.max_score == sum(cell_max for cell_max in _max_points(root, sample.lesson).values())
    for reason in sample.reasons:
        said = row["error"] + row["notes"] + row.get("flags", "")
        assert reason in said, f"{sample.case}: report says {said!r}"


@pytest.mark.parametrize("sample", HONEST, ids=lambda s: f"{s.lesson}/{s.case}")
def test_honest_students_in_the_same_class_are_unaffected(hostile_class, sample):
    root, _, _ = hostile_class
    assert notebook_score(root, sample.lesson, sample.student).cells == sample.expected


def _max_points(root, lesson):
    source = nbformat.read(root / "source" / lesson / f"{lesson}.ipynb", 4)
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
            for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}


def test_the_gradebook_and_the_canaries_stay_intact(hostile_class):
    root, _, _ = hostile_class
    for canary in CANARIES:
        assert (root / canary).read_text() == "canary\n" and not (root / canary).is_symlink()
    with sqlite3.connect(root / "gradebook.db") as db:
        assert db.execute("pragma integrity_check").fetchone() == ("ok",)
        students = {row[0] for row in db.execute("select id from student")}
    graded = {s.student for s in HOSTILE if s.expected is not None}
    assert graded <= students


def printed(root, student, grade_id):
    nb = nbformat.read(root / "autograded" / student / "performance-01" / "performance-01.ipynb", 4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "".join(out.get("text", "") for out in cell.outputs)


def test_nothing_outside_the_submission_was_visible(hostile_class):
    root, _, _ = hostile_class
    assert printed(root, "hostile-reads-source", "workload") == "found nothing to print\n"
    assert "connected to" not in printed(root, "hostile-network", "workload")
    host = printed(root, "hostile-host-folders", "workload")
    assert host.count("refused") >= 3 and "WRITTEN" not in host and "REPLACED" not in host, host
    attempts = printed(root, "hostile-gradebook-write", "workload")
    assert attempts.count("refused") == 3 and "WRITTEN" not in attempts
    graded = root / "autograded" / "hostile-output-flood" / "performance-01" / "performance-01.ipynb"
    assert graded.stat().st_size < 3_000_000


@pytest.fixture(scope="module")
def hostile_feedback(hostile_class):
    """nbgrader generate_feedback (plain nbgrader, as an instructor runs it) for every hostile
    student's performance-01, and for one honest student graded beside them."""
    root, _, _ = hostile_class
    for pattern in ("hostile-*", "sample-unsynchronized"):
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "performance-01", "--force",
                        "--student", pattern], cwd=root, env=nbgrader_env(), check=True, capture_output=True)
    return root


def test_feedback_shows_no_hidden_tests_or_their_outputs(hostile_feedback):
    root = hostile_feedback
    for student in ("hostile-patched-during-test", "sample-unsynchronized"):
        html = (root / "feedback" / student / "performance-01" / "performance-01.html").read_text()
        # Student cells keep their own tracebacks; nothing from a hidden test may show.
        for hidden in ("BEGIN HIDDEN TESTS", "run_timer", "perfcourse.checks", "_late", "trusted.array",
                       "the kernel was tampered", "was read before the result", "must be compiled with jax.jit"):
            assert hidden not in html, f"{student}: feedback shows {hidden!r}"
        assert "This cell&#39;s checks" in html or "This cell's checks" in html


def test_feedback_and_autograded_folders_hold_only_the_notebook_and_its_html(hostile_feedback):
    root = hostile_feedback
    students = [s.student for s in HOSTILE if s.expected is not None and s.lesson == "performance-01"]
    for folder, allowed in (("autograded", ".ipynb"), ("feedback", ".html")):
        for student in students:
            where = root / folder / student / "performance-01"
            found = sorted(p.name for p in where.iterdir())
            assert found == [f"performance-01{allowed}"], f"{folder}/{student}: {found}"
            assert not any(p.is_symlink() for p in where.iterdir())


def test_the_students_history_holds_no_grade_cell(hostile_class):
    root, _, _ = hostile_class
    nb = nbformat.read(root / "autograded" / "hostile-history-print" / "performance-01" / "performance-01.ipynb", 4)
    everything = nbformat.writes(nb)
    assert "HISTORY:" in everything  # the hook ran after the student's later cells
    history = "".join(out.get("text", "") for c in nb.cells for out in c.get("outputs", [])
                      if "HISTORY:" in out.get("text", ""))
    for hidden in ("BEGIN HIDDEN TESTS", "perfcourse.checks", "check_synchronized", "Public checks"):
        assert hidden not in history


def test_a_students_markup_reaches_no_page_an_instructor_opens(hostile_class):
    """The graded notebook Formgrader renders, and the feedback nbgrader writes from it, hold the
    student's HTML as inert text: no script, handler or JavaScript output survives grading."""
    from test_feedback import active

    root, _, _ = hostile_class
    lesson, student = "performance-03", "hostile-markup-for-the-instructor"
    nb = nbformat.read(root / "autograded" / student / lesson / f"{lesson}.ipynb", 4)
    shown = [out for cell in nb.cells for out in cell.get("outputs", []) if out.get("output_type") == "display_data"]
    assert any("for the grader" in out.get("data", {}).get("text/html", "") for out in shown)
    assert not any("application/javascript" in out.get("data", {}) for out in shown)
    assert not [text for out in shown for text in active(out.get("data", {}).get("text/html", ""))]
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", lesson, "--force", "--student", student],
                   cwd=root, env=nbgrader_env(), check=True, capture_output=True)
    page = (root / "feedback" / student / lesson / f"{lesson}.html").read_text()
    assert "for the grader" in page and not [text for text in active(page) if "perfcourseRan" in text]
