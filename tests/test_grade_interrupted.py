"""`perfcourse grade` interrupted (Ctrl-C, or SIGTERM from a job's time limit or `kill`) stops.

The pool's threads used to go on grading the whole class after the command said it was
interrupted, and its workers (in sessions of their own, so a terminal's Ctrl-C reaches only the
grader) outlived it. Now no notebook is given out after the interruption, every worker stops its
kernels and removes its folders on the way out, and the next run grades what was left.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, copy_course, perfcourse

from perfcourse import samples
from perfcourse.grading.run import up_to_date
from perfcourse.nbgrader_bridge import notebook_score

LESSON = "performance-03"  # short notebooks: the class is four of them
STUDENTS = 4


def workers_in(root: Path) -> list[int]:
    """Pids of grading workers whose folder is this course."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            here = os.readlink(entry / "cwd")
        except (OSError, ValueError):
            continue
        if b"perfcourse.grading.worker" in command and Path(here) == root:
            found.append(int(entry.name))
    return found


def graded(root: Path, everyone) -> list:
    return [s for s in everyone if up_to_date(root, s.student, LESSON)]


# A worker's SIGTERM raises nothing (nbgrader runs a notebook inside a bare `except:`, which would
# swallow it): it kills the kernels of the notebook under way, and the worker stops after it.
WORKER_SIGTERM = """
import os, signal, time
from perfcourse.grading import interruption
interruption.install()
killed = []
with interruption.stopping(lambda: killed.append("kernels of the notebook under way")):
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler has run by now
    except BaseException as exc:
        print("raised", type(exc).__name__)
    print("requested", interruption.requested(), killed)
with interruption.stopping(lambda: killed.append("kernels of a notebook begun after it")):
    print(killed)
"""


def test_a_workers_sigterm_kills_the_kernels_under_way_and_raises_nothing():
    proc = subprocess.run([sys.executable, "-c", WORKER_SIGTERM], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "requested True ['kernels of the notebook under way']",
        "['kernels of the notebook under way', 'kernels of a notebook begun after it']"]


# SIGTERM is turned into the KeyboardInterrupt of a Ctrl-C (cli.py), so Ctrl-C's run is nightly.
@pytest.mark.parametrize("how", [pytest.param(signal.SIGINT, marks=pytest.mark.nightly), signal.SIGTERM],
                         ids=["ctrl-c", "sigterm"])
@pytest.mark.e2e
def test_an_interrupted_grading_stops_leaves_nothing_and_the_next_run_grades_the_rest(tmp_path, how):
    root = copy_course(tmp_path / "course")
    perfcourse("release", "--lesson", LESSON, cwd=root, check=True)
    solution = samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON)
    everyone = [dataclasses.replace(solution, case=f"{k}") for k in range(STUDENTS)]
    samples.write_submissions(root, everyone)
    scratch = Path(tempfile.mkdtemp(prefix="grader-tmp-", dir="/tmp"))  # short: sockets lie below it
    try:
        grading = subprocess.Popen([sys.executable, "-m", "perfcourse.cli", "grade", "--workers", "2"], cwd=root,
                                   env={**os.environ, "TMPDIR": str(scratch)}, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120  # until the first notebook is graded, the next ones under way
        while not graded(root, everyone) and time.monotonic() < deadline and grading.poll() is None:
            time.sleep(0.2)
        assert graded(root, everyone) and workers_in(root)
        grading.send_signal(how)
        stopped = time.monotonic()
        _, stderr = grading.communicate(timeout=60)
        assert grading.returncode == 130 and "interrupted" in stderr, stderr
        assert time.monotonic() - stopped < 30
        assert not workers_in(root)
        assert sorted(scratch.iterdir()) == []  # every kernel's folder removed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    done = graded(root, everyone)
    assert 0 < len(done) < STUDENTS  # interrupted while the class was being graded
    # The notebooks under way when it stopped hold nbgrader's placeholder score until graded again.
    again = perfcourse("grade", cwd=root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{STUDENTS - len(done)} of {STUDENTS} notebooks graded now, {len(done)} up to date" in again.stdout, \
        again.stdout
    for sample in everyone:
        assert notebook_score(root, LESSON, sample.student).cells == sample.expected
