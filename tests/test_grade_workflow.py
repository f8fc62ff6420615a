"""`perfcourse grade` as an instructor runs it, against nbgrader's own view of the class.

One scratch course, performance-07 only (a lesson without timers: the workflow is the subject
here, and a timing check judged while the end-to-end tier's other classes load the cores is
not; the samples and tests/test_under_load.py prove the timers), a class of three: `ontime` and `late` are on nbgrader's
student list, `stranger` is not, and the course sets Autograde.create_student = False and a late
penalty of zero points (nbgrader's LateSubmissionPlugin); `ontime`'s notebook comes with every
cell's nbgrader metadata stripped (as a tool that drops metadata leaves it). The test then checks, in order:
- the grade table and grades.csv say what `nbgrader export` says, penalty included; the
  unlisted student is refused with the reason and never added to the gradebook; the stripped
  notebook earns every point, with one note (the grade table's and the feedback's) saying why;
- a second run grades nothing (every submission is up to date) and reports the same scores;
- a resubmission is graded again, alone; `--student` limits a run; `--force` regrades; a narrowed
  run rewrites its own rows of grades.csv and keeps the rest of the class.
"""
from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, perfcourse

from perfcourse import nbgrader_bridge, samples

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("grade-workflow")]  # one course, graded once per worker

LESSON = "performance-07"
POINTS = 10  # the lesson's, all earned by its solution
DUE = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)


def rows(path):
    with open(path, newline="") as handle:
        return {(row["student_id"], row["assignment"]): row for row in csv.DictReader(handle)}


def table_line(stdout: str, student: str) -> str:
    """The student's row of the grade table, with its wrapped notes (the indented lines after it) joined on."""
    lines = stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(student + " "))
    row = [lines[at].rstrip()]
    for line in lines[at + 1:]:
        if not line.startswith(" ") or not line.strip():
            break
        row.append(line.strip())
    return " ".join(row)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    from conftest import copy_course

    root = copy_course(tmp_path_factory.mktemp("workflow") / "course")
    with open(root / "grader_config.py", "a") as config:
        config.write("\nc.Autograde.create_student = False\nc.LateSubmissionPlugin.penalty_method = 'zero'\n")
    perfcourse("release", "--lesson", LESSON, cwd=root, check=True)
    with nbgrader_bridge.gradebook(root) as gb:
        gb.update_or_create_assignment(LESSON, duedate=DUE.replace(tzinfo=None))
        gb.add_student("ontime")
        gb.add_student("late")
    solved = samples.build(root, samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON))
    for student, submitted_at in (("ontime", DUE - timedelta(hours=1)), ("late", DUE + timedelta(hours=1)),
                                  ("stranger", DUE - timedelta(hours=2))):
        folder = nbgrader_bridge.folder(root, "submitted", student, LESSON)
        folder.mkdir(parents=True)
        nbformat.write(stripped(solved) if student == "ontime" else solved, folder / f"{LESSON}.ipynb")
        (folder / "timestamp.txt").write_text(submitted_at.strftime("%Y-%m-%d %H:%M:%S.%f %Z"))
    return root


def stripped(nb):
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    return nb


@pytest.fixture(scope="module")
def scratch():
    """The grader's temporary folder (TMPDIR) in the first run: the kernels' runtime folders. In
    /tmp, not in pytest's deeper folders: the channel's Unix socket lies below it."""
    folder = Path(tempfile.mkdtemp(prefix="grader-tmp-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def first_run(workflow, scratch):
    return perfcourse("grade", cwd=workflow, env={"TMPDIR": str(scratch)})


def test_the_grading_workers_leave_nothing_behind(first_run, scratch):
    """Each worker ends on its own once the class is graded, stopping the trusted kernel it kept
    (grading/trusted_kernel.py) and removing every kernel's folder."""
    assert "notebooks graded now" in first_run.stdout, first_run.stdout + first_run.stderr
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_scores_are_nbgraders_own_late_penalty_included(workflow, first_run):
    assert first_run.returncode == 1, first_run.stdout + first_run.stderr  # the stranger is not graded
    exported = workflow / "exported.csv"
    subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(exported)], cwd=workflow,
                   env=nbgrader_bridge.nbgrader_env(), check=True, capture_output=True)
    theirs, ours = rows(exported), rows(workflow / "grades.csv")
    for student, score, penalty in (("ontime", POINTS, 0), ("late", 0, POINTS)):
        key = (student, LESSON)
        assert float(theirs[key]["score"]) == score and float(theirs[key]["late_submission_penalty"]) == penalty
        for column in ("raw_score", "late_submission_penalty", "score", "max_score", "timestamp"):
            assert ours[key][column] == theirs[key][column], (column, ours[key], theirs[key])
    assert f"0/{POINTS}" in table_line(first_run.stdout, "late")
    assert f"-{POINTS} late" in table_line(first_run.stdout, "late")
    assert f"{POINTS}/{POINTS}" in table_line(first_run.stdout, "ontime")


def test_a_notebook_stripped_of_its_metadata_earns_every_point_with_one_note(workflow, first_run, monkeypatch):
    """Its cells got their metadata back by cell id before nbgrader put the tests back
    (grading/restore_metadata.py): the score it deserves, and one note in grades.csv and the feedback."""
    from perfcourse.grading.loss_notes import CELL_ID, LossNotes, markdown_text

    assert f"{POINTS}/{POINTS}" in table_line(first_run.stdout, "ontime")
    note = rows(workflow / "grades.csv")[("ontime", LESSON)]["notes"]
    assert note.startswith("nbgrader metadata restored: ") and "by cell id (" in note
    assert "; " not in note  # one note (grades.csv joins them with "; "), every cell restored
    graded = nbformat.read(nbgrader_bridge.folder(workflow, "autograded", "ontime", LESSON) / f"{LESSON}.ipynb", 4)
    monkeypatch.chdir(workflow)  # where nbgrader's generate_feedback runs it
    feedback, _ = LossNotes(config=nbgrader_bridge.config(workflow)).preprocess(
        graded, {"nbgrader": {"assignment": LESSON, "notebook": LESSON, "student": "ontime"}})
    assert feedback.cells[0].id == CELL_ID and feedback.cells[0].source.count("\n- ") == 1
    assert f"- {markdown_text(note)}" in feedback.cells[0].source


def test_a_student_missing_from_the_list_is_refused_not_added(workflow, first_run):
    assert ("stranger", LESSON) not in rows(workflow / "exported.csv")
    assert "stranger" not in nbgrader_bridge.students(workflow)
    line = table_line(first_run.stdout, "stranger")
    assert "not graded" in line and "create_student is False" in line
    assert f"NOT GRADED stranger/{LESSON}" in first_run.stdout


def test_a_second_run_grades_only_what_changed(workflow, first_run):
    again = perfcourse("grade", "--lesson", LESSON, cwd=workflow)
    assert "0 of 3 notebooks graded now, 2 up to date" in again.stdout, again.stdout + again.stderr
    assert "up to date" in table_line(again.stdout, "ontime")
    assert f"{POINTS}/{POINTS}" in table_line(again.stdout, "ontime")
    assert f"0/{POINTS}" in table_line(again.stdout, "late")

    # ontime resubmits (a new timestamp); only that notebook is graded again, and only ontime is named.
    (workflow / "submitted" / "ontime" / LESSON / "timestamp.txt").write_text(
        (DUE - timedelta(minutes=5)).strftime("%Y-%m-%d %H:%M:%S.%f %Z"))
    resubmitted = perfcourse("grade", "--student", "ontime", "--student", "late", cwd=workflow)
    assert resubmitted.returncode == 0, resubmitted.stdout + resubmitted.stderr
    assert "1 of 2 notebooks graded now, 1 up to date" in resubmitted.stdout
    assert "stranger" not in resubmitted.stdout
    assert "up to date" not in table_line(resubmitted.stdout, "ontime")

    before = rows(workflow / "grades.csv")
    forced = perfcourse("grade", "--student", "late", "--lesson", LESSON, "--force", cwd=workflow)
    assert forced.returncode == 0 and "1 of 1 notebooks graded now" in forced.stdout, forced.stdout + forced.stderr
    assert f"0/{POINTS}" in table_line(forced.stdout, "late")
    assert "graded 1/1" not in forced.stderr and "\r" not in forced.stderr  # line by line off a terminal
    # grades.csv still holds the whole class: the narrowed run rewrote late's row only, and says so.
    after = rows(workflow / "grades.csv")
    assert set(after) == set(before) == {(s, LESSON) for s in ("ontime", "late", "stranger")}
    assert {k: r for k, r in after.items() if k[0] != "late"} == {k: r for k, r in before.items() if k[0] != "late"}
    assert after[("late", LESSON)]["graded"] == "now" and "2 other row(s)" in forced.stdout


def test_an_unknown_student_is_one_clear_error(workflow, first_run):
    before = (workflow / "grades.csv").read_bytes()
    proc = perfcourse("grade", "--student", "nobody-here", cwd=workflow)
    assert proc.returncode == 2 and "no submissions of 'nobody-here'" in proc.stderr, proc.stderr
    assert (workflow / "grades.csv").read_bytes() == before
