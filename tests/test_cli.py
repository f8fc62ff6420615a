"""The command line and the grading run's bookkeeping, without kernels (the fast tier).

Arguments are validated before anything runs; settings come from their one home (grader_config.py
through nbgrader's configuration, the kernels' table); the digest that decides "up to date" moves
with every byte of a submission and of the instructor's notebook; the report renders nbgrader's
export rows; progress off a terminal is one line per notebook.
"""
from __future__ import annotations

import io
import json

import nbformat
import pytest

from conftest import ROOT

from perfcourse import __version__, kernels, nbgrader_bridge
from perfcourse.course import CourseError
from perfcourse.grading import run, scratch
from perfcourse.report import grade_table as report


def cli(args, cwd, monkeypatch, capsys) -> tuple[int, str, str]:
    """`perfcourse ARGS` in this process (argparse's exits included): exit status, stdout, stderr."""
    from perfcourse.cli import main

    monkeypatch.chdir(cwd)
    try:
        status = main(list(args))
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_version(monkeypatch, capsys):
    status, out, _ = cli(["--version"], ROOT, monkeypatch, capsys)
    assert status == 0 and out.strip() == f"perfcourse {__version__}" != "perfcourse unknown"


@pytest.mark.parametrize("args", [("--workers", "-1"), ("--workers", "0"), ("--workers", "two"),
                                  ("--cell-timeout", "0"), ("--student", "../alice"), ("--student", "")])
def test_bad_grade_arguments_are_refused_before_anything_runs(course, args, monkeypatch, capsys):
    (course / "grades.csv").write_text("kept\n")
    status, out, err = cli(["grade", *args], course, monkeypatch, capsys)
    assert status == 2 and f"argument {args[0]}:" in err and out == "", out + err
    assert (course / "grades.csv").read_text() == "kept\n" and not (course / "autograded").exists()


def test_the_worker_watchdog_follows_the_notebook_limit_in_grader_config(course):
    default = run.notebook_limit(course)
    assert default > nbgrader_bridge.config(course).GuardedExecute.notebook_timeout
    with open(course / "grader_config.py", "a") as config:
        config.write("\nc.GuardedExecute.notebook_timeout = 1000\n")
    assert run.notebook_limit(course) == default + 1000 - 600 > 1000


def test_a_limit_missing_from_grader_config_is_named_before_grading(course):
    text = (course / "grader_config.py").read_text()
    kept = [line for line in text.splitlines() if not line.startswith("c.GuardedExecute.memory_bytes")]
    (course / "grader_config.py").write_text("\n".join(kept) + "\n")
    with pytest.raises(CourseError, match=r"grader_config.py: .*must set GuardedExecute.memory_bytes"):
        run.notebook_limit(course)


def test_grading_uses_the_configured_kernel(course, monkeypatch, capsys):
    text = (course / "grader_config.py").read_text().replace('"jax-cpu"', '"jax-elsewhere"')
    (course / "grader_config.py").write_text(text)
    (course / "submitted" / "alice" / "performance-01").mkdir(parents=True)
    status, _, err = cli(["grade"], course, monkeypatch, capsys)
    assert status == 2 and "unknown kernel 'jax-elsewhere'" in err, err


def test_the_digest_moves_with_the_submission_and_the_checks(tmp_path):
    folder, checks = tmp_path / "alice", tmp_path / "source.ipynb"
    (folder / "data").mkdir(parents=True)
    (folder / "performance-01.ipynb").write_text("{}")
    (folder / "data" / "x.txt").write_text("1")
    checks.write_text("checks v1")
    first = scratch.digest(folder, checks)
    assert scratch.digest(folder, checks) == first
    changes = [lambda: (folder / "data" / "x.txt").write_text("2"),
               lambda: (folder / "data" / "x.txt").rename(folder / "data" / "y.txt"),
               lambda: (folder / "timestamp.txt").write_text("2026-11-30 12:00:00"),
               lambda: checks.write_text("checks v2")]
    seen = {first}
    for change in changes:
        change()
        seen.add(scratch.digest(folder, checks))
    assert len(seen) == len(changes) + 1
    (folder / "link").symlink_to(checks)
    with pytest.raises(scratch.SubmissionRefused):
        scratch.digest(folder, checks)


def test_up_to_date_needs_the_same_digest_and_a_score(course):
    # The positive case (graded, unchanged, scored: skipped) is proven end to end in test_grade_workflow.
    from perfcourse.grading.execute import TIMING_KEY

    folder = nbgrader_bridge.folder(course, "submitted", "alice", "performance-01")
    folder.mkdir(parents=True)
    (folder / "performance-01.ipynb").write_text("{}")
    assert not run.up_to_date(course, "alice", "performance-01")  # never graded
    graded = nbgrader_bridge.folder(course, "autograded", "alice", "performance-01")
    graded.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata[TIMING_KEY] = {"submission": run.submission_digest(course, "alice", "performance-01")}
    nbformat.write(nb, graded / "performance-01.ipynb")
    assert not run.up_to_date(course, "alice", "performance-01")  # the gradebook has no score for it


def test_the_report_shows_nbgraders_score_after_the_late_penalty(tmp_path):
    late = run.Outcome("late", "performance-01", 3.0, export={
        "assignment": "performance-01", "duedate": "2026-11-01 12:00:00", "timestamp": "2026-11-01 13:00:00",
        "student_id": "late", "raw_score": "8.0", "late_submission_penalty": "8.0", "score": "0.0",
        "max_score": "8.0"})
    kept = run.Outcome("kept", "performance-01", up_to_date=True, export={
        "assignment": "performance-01", "student_id": "kept", "raw_score": "8.0",
        "late_submission_penalty": "0.0", "score": "8.0", "max_score": "8.0"})
    refused = run.Outcome("x", "performance-01", error="refused submitted/x/performance-01/: it is a symbolic link")
    text = report.table([kept, late, refused])
    assert [line.split()[2:4] for line in text.splitlines()[2:4]] == [["8/8", "-"], ["0/8", "-8"]]
    assert "up to date" in text.splitlines()[2] and "not graded" in text.splitlines()[4]
    report.write_csv(tmp_path / "grades.csv", [kept, late, refused])
    import csv
    with open(tmp_path / "grades.csv") as handle:
        written = list(csv.DictReader(handle))
    assert [(r["student_id"], r["score"], r["late_submission_penalty"], r["graded"]) for r in written] == [
        ("kept", "8.0", "0.0", "before"), ("late", "0.0", "8.0", "now"), ("x", "", "", "no")]


def test_a_narrowed_run_rewrites_only_its_rows_of_grades_csv(tmp_path):
    import csv

    def graded(student, lesson, score):
        return run.Outcome(student, lesson, 2.5, flags=[f"flag of {student}"], export={
            "assignment": lesson, "student_id": student, "raw_score": score, "late_submission_penalty": "0.0",
            "score": score, "max_score": "8.0"})

    path = tmp_path / "grades.csv"
    whole = [graded(s, lesson, "8.0") for s in ("ann", "bo", "cy") for lesson in ("performance-01", "performance-02")]
    assert report.write_csv(path, whole) == 0
    first = path.read_text()
    assert report.write_csv(path, [graded("bo", "performance-02", "3.0")]) == 5
    with open(path, newline="") as handle:
        written = list(csv.DictReader(handle))
    assert [(r["student_id"], r["assignment"]) for r in written] == [(o.student, o.lesson) for o in whole]
    changed = [r for r in written if r["score"] != "8.0"]
    assert [(r["student_id"], r["assignment"], r["score"]) for r in changed] == [("bo", "performance-02", "3.0")]
    assert [line for line in path.read_text().splitlines() if ",bo," not in line or "performance-01" in line] == \
        [line for line in first.splitlines() if ",bo," not in line or "performance-01" in line]
    path.write_bytes(b"\xff not a csv")  # an unreadable file is replaced by this run's rows
    assert report.write_csv(path, whole[:1]) == 0 and len(path.read_text().splitlines()) == 2
    assert (tmp_path / "grades.csv.unreadable").read_bytes() == b"\xff not a csv"  # and kept beside it


def test_the_report_names_the_graders_errors_and_a_course_that_cannot_grade_on_this_jax():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("check()")
    cell.outputs = [nbformat.v4.new_output("error", ename="InstrumentMissing", evalue="jax 9.9: update SYNC_CALLS",
                                           traceback=[])]
    timed_out = nbformat.v4.new_code_cell("spin()")
    timed_out.outputs = [nbformat.v4.new_output("error", ename="CellTimeoutError", evalue="", traceback=[]),
                         nbformat.v4.new_output("error", ename="ValueError", evalue="a student's own", traceback=[])]
    nb.cells = [cell, timed_out, cell]
    assert run.notes_of(nb) == ["InstrumentMissing: jax 9.9: update SYNC_CALLS", "CellTimeoutError: cell timed out"]


def test_progress_off_a_terminal_is_one_line_per_notebook():
    stream = io.StringIO()
    progress = run.Progress(3, stream=stream)
    for label in ("a/performance-01", "b/performance-01", "c/performance-01"):
        progress.advance(label)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and len(lines) == 3
    assert lines[0].endswith("a/performance-01") and "1/3" in lines[0] and "3/3" in lines[2]


def test_the_kernel_is_installed_by_ipykernel_with_the_course_environment(tmp_path):
    path = kernels.install(kernels.DEFAULT, prefix=tmp_path)
    spec = json.loads(path.read_text())
    assert path == tmp_path / "share" / "jupyter" / "kernels" / kernels.DEFAULT / "kernel.json"
    assert spec["env"] == {"JAX_PLATFORMS": "cpu"} and "ipykernel_launcher" in spec["argv"]
    assert spec["display_name"] == kernels.KERNELS[kernels.DEFAULT]["display_name"]


def test_an_unlisted_student_is_refused_when_the_course_creates_none(course):
    with open(course / "grader_config.py", "a") as config:
        config.write("\nc.Autograde.create_student = False\n")
    with nbgrader_bridge.gradebook(course) as gb:
        gb.add_student("alice")
    for student in ("alice", "mallory"):
        folder = nbgrader_bridge.folder(course, "submitted", student, "performance-01")
        folder.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(), folder / "performance-01.ipynb")
    gradable, refused = run.survey(course, ["performance-01"])
    assert gradable == {"alice": ["performance-01"]}, [o.error for o in refused]
    assert [(o.student, "create_student is False" in o.error) for o in refused] == [("mallory", True)]
    assert run.survey(course, ["performance-01"], only=["mallory"])[0] == {}


def test_the_course_files_are_named_once():
    from perfcourse import course, release

    assert not hasattr(release, "CONFIG_FILES") or release.CONFIG_FILES is course.CONFIG_FILES
    assert set(course.CONFIG_FILES) <= set(course.COURSE_PARTS)
    assert all((ROOT / part).exists() for part in course.COURSE_PARTS)


@pytest.mark.e2e  # a real fresh start: an interpreter without this environment on PATH, a new gradebook
def test_a_fresh_clone_with_submissions_is_told_to_release_first(course):
    """No gradebook yet, and this environment's bin/ not on PATH (where plain nbgrader finds alembic)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder = nbgrader_bridge.folder(course, "submitted", "alice", "performance-01")
    folder.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), folder / "performance-01.ipynb")
    bindir = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != bindir)
    proc = subprocess.run([sys.executable, "-m", "perfcourse.cli", "grade", "--unsandboxed"], cwd=course,
                          env={**os.environ, "PATH": path}, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "perfcourse: error: performance-01 not in the gradebook "
        f"(sqlite:///{course}/gradebook.db): run 'make release' (perfcourse release) first")


def test_every_student_is_in_the_gradebook_before_their_notebooks_are_graded(course):
    """The pool grades two notebooks of one student at once (grading/run.py): each student is added
    first, once, so no two of nbgrader's autogrades both try to add them."""
    with nbgrader_bridge.gradebook(course) as gb:
        gb.add_student("alice")
    nbgrader_bridge.add_students(course, ["alice", "bob", "carol"])
    nbgrader_bridge.add_students(course, ["bob"])  # already there: nothing changes
    assert nbgrader_bridge.students(course) == {"alice", "bob", "carol"}


def test_a_narrowed_run_that_regrades_nothing_keeps_the_timing_of_the_run_that_graded(tmp_path):
    import csv

    exported = {"assignment": "performance-01", "student_id": "alice", "raw_score": "8.0",
                "late_submission_penalty": "0.0", "score": "8.0", "max_score": "8.0"}
    path = tmp_path / "grades.csv"
    report.write_csv(path, [run.Outcome("alice", "performance-01", 8.096, export=exported)])
    report.write_csv(path, [run.Outcome("alice", "performance-01", up_to_date=True, export=exported)])
    with open(path) as handle:
        [row] = list(csv.DictReader(handle))
    assert (row["graded"], row["seconds"], row["score"]) == ("now", "8.096", "8.0")
    report.write_csv(tmp_path / "new.csv", [run.Outcome("bob", "performance-01", up_to_date=True, export=exported)])
    with open(tmp_path / "new.csv") as handle:
        [row] = list(csv.DictReader(handle))
    assert (row["graded"], row["seconds"]) == ("before", "")  # no earlier run to keep: no time is made up


def test_the_grade_table_fits_a_terminal_with_every_note_and_flag_kept():
    notes = [f"AssertionError: the check of cell {n} failed for this reason, which takes many words" for n in range(6)]
    flags = ["read a private attribute of the timer (once)", "wrote to a file outside the notebook's folder"]
    outcomes = [run.Outcome("alice", "performance-01", 3.0, notes=notes, flags=flags),
                run.Outcome("bob", "performance-02", 1.0)]
    for width in (80, 120):
        text = report.table(outcomes, width=width)
        assert max(map(len, text.splitlines())) <= width, text
        joined = " ".join(text.split())
        assert all(" ".join(note.split()) in joined for note in notes) or all(
            word in joined for note in notes for word in note.split())
        assert text.splitlines()[2].startswith("alice") and any(line.startswith("bob") for line in text.splitlines())
