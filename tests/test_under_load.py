"""Grades do not depend on what else the machine is doing: the sample class and the adversarial
catalogue graded while every core is kept busy by other processes.

The timing checks judge each measurement against lengths the grading kernel picked and held
itself, and against a calibration made in the same kernel, never against a machine's speed; a
run that this side saw stalled is run again. This proves it end to end: every score as deserved
with twice as many CPU-bound processes as cores running beside the grader, steadily for the whole
class and in random bursts for the lessons whose checks time calls (started and stopped here,
each ending by itself after a bounded time; the load is perfcourse/busy.py). Nightly: about 10
minutes on 2 cores (6 min 20 s steady, 3 min 53 s in bursts, 3 December 2026).
"""
import csv
import time

import pytest

from conftest import ROOT, copy_course, perfcourse

from perfcourse import samples
from perfcourse.busy import BURSTS, STEADY, busy_machine
from perfcourse.nbgrader_bridge import notebook_score

pytestmark = [pytest.mark.e2e, pytest.mark.nightly]

# The lessons whose checks time calls in the grading kernel: the timer (performance-01), the
# loop's compile stages (performance-04) and the diagnosed loop's device hold (performance-10).
TIMED_LESSONS = ["performance-01", "performance-04", "performance-10"]


def graded_beside(script: str, folder, everyone):
    """(course, grade process, seconds) for `everyone` graded while `script` keeps the cores busy."""
    root = copy_course(folder / "course")
    perfcourse("release", cwd=root, check=True)
    samples.write_submissions(root, everyone)
    with busy_machine(script):
        started = time.monotonic()
        proc = perfcourse("grade", "--workers", "2", "--force", cwd=root)
        return root, proc, time.monotonic() - started


def wrong_scores(root, everyone) -> list[str]:
    """Every score as deserved, and every reason the report owes a hostile entry (`# reason:`)."""
    with open(root / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {(row["student_id"], row["assignment"]): row for row in csv.DictReader(handle)}
    wrong = []
    for sample in everyone:
        score = notebook_score(root, sample.lesson, sample.student)
        if sample.expected is None:
            if score is not None:
                wrong.append(f"{sample.student}/{sample.lesson}: graded, should have been refused")
        elif score is None or score.cells != sample.expected:
            wrong.append(f"{sample.student}/{sample.lesson}: {score and score.cells} != {sample.expected}")
        row = rows.get((sample.student, sample.lesson), {})
        said = " ".join(row.get(column) or "" for column in ("error", "notes", "flags"))
        wrong += [f"{sample.student}/{sample.lesson}: the report does not say {reason!r} ({said!r})"
                  for reason in sample.reasons if reason not in said]
    return wrong


def test_every_submission_scores_as_deserved_on_a_busy_machine(tmp_path):
    everyone = samples.discover(ROOT) + samples.discover(ROOT, folder="adversarial", prefix="hostile")
    root, proc, seconds = graded_beside(STEADY, tmp_path, everyone)
    wrong = wrong_scores(root, everyone)
    assert not wrong, (f"graded in {seconds:.0f} s beside a busy machine:\n" + "\n".join(wrong) + "\n"
                       + proc.stdout[-3000:])


def test_timed_lessons_score_as_deserved_beside_bursts_of_load(tmp_path):
    """The timing checks under load that comes and goes: a burst that stalls some calls of a run
    and not others is what a steady load never shows."""
    everyone = (samples.discover(ROOT, TIMED_LESSONS)
                + samples.discover(ROOT, TIMED_LESSONS, folder="adversarial", prefix="hostile"))
    root, proc, seconds = graded_beside(BURSTS, tmp_path, everyone)
    wrong = wrong_scores(root, everyone)
    assert not wrong, (f"graded in {seconds:.0f} s beside bursts of load:\n" + "\n".join(wrong) + "\n"
                       + proc.stdout[-3000:])
