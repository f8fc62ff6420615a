"""Grades do not depend on what else the machine is doing: the sample class and the adversarial
catalogue graded while every core is kept busy by other processes.

The timing checks judge each measurement against lengths the grading kernel picked and held
itself, and against a calibration made in the same kernel, never against a machine's speed; a
failing timing verdict is repeated once. This proves it end to end: every score as deserved with
twice as many CPU-bound processes as cores running beside the grader (started and stopped here,
each ending by itself after a bounded time). Nightly: about 20 minutes on 2 cores.
"""
import csv
import multiprocessing
import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT, copy_course, perfcourse

from perfcourse import samples
from perfcourse.nbgrader_bridge import notebook_score

pytestmark = [pytest.mark.e2e, pytest.mark.nightly]

LOAD_SECONDS = 3600  # each busy process ends by itself after this, whatever happens to the test
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture(scope="module")
def busy_machine():
    """Two CPU-bound processes per core, stopped after the module."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=LOAD_SECONDS)])
                for _ in range(2 * (os.cpu_count() or multiprocessing.cpu_count()))]
    time.sleep(1)
    assert all(p.poll() is None for p in spinners)
    yield len(spinners)
    for p in spinners:
        p.kill()
        p.wait(timeout=30)


@pytest.fixture(scope="module")
def class_under_load(tmp_path_factory, busy_machine):
    root = copy_course(tmp_path_factory.mktemp("loaded") / "course")
    honest = samples.discover(ROOT)
    hostile = samples.discover(ROOT, folder="adversarial", prefix="hostile")
    perfcourse("release", cwd=root, check=True)
    samples.write_submissions(root, honest + hostile)
    started = time.monotonic()
    proc = perfcourse("grade", "--workers", "2", "--force", cwd=root)
    return root, proc, honest + hostile, time.monotonic() - started


def test_every_submission_scores_as_deserved_on_a_busy_machine(class_under_load):
    """Every score as deserved, and every reason the report owes a hostile entry (`# reason:`)."""
    root, proc, everyone, seconds = class_under_load
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
    assert not wrong, f"graded in {seconds:.0f} s beside a busy machine:\n" + "\n".join(wrong) + "\n" + proc.stdout[-3000:]
