"""`perfcourse grade --cluster`: grading on Dask workers, the gradebook on PostgreSQL.

The fast tests check, without kernels, what crosses between the grader and a worker (the task's
files, the result's shape, an executed notebook's cells) and the bookkeeping that records each
student once. The e2e tests run real services on 127.0.0.1 (a `dask scheduler`, two `dask worker`
processes, a PostgreSQL server): a class graded through the cluster into PostgreSQL scores what a
local run into SQLite scores; a worker killed mid-task loses nobody; a scheduler that goes away
ends the run with an error and leaves nothing half-written.
"""
from __future__ import annotations

import contextlib
import csv
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from cluster_services import dask_cluster, postgres_bin, postgresql, tls_files
from conftest import ROOT, copy_course
from nbformat.v4 import new_code_cell, new_notebook, new_output

from perfcourse import nbgrader_bridge, release, samples
from perfcourse.cli import _scheduler, parser
from perfcourse.course import CourseError
from perfcourse.grading import cluster, scratch
from perfcourse.grading.replay import ExecutionRefused, merge_outputs, parse_executed

# The class the e2e tests grade: a lesson quick to grade (about 3 s a notebook here), a full
# mark, a zero and a partial score.
LESSON = "performance-03"
CASES = ("solution", "release", "wrong-shapes")
pytestmark = pytest.mark.xdist_group("cluster")  # the end-to-end tests share one PostgreSQL server


# --- fast: no kernels, no services -----------------------------------------------------------
def _graded_pair():
    grade = {"grade": True, "grade_id": "test_a", "points": 2, "solution": False, "locked": True,
             "schema_version": 3}
    mine = new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("assert x == 1", metadata={"nbgrader": grade})])
    theirs = nbformat.reads(nbformat.writes(mine), as_version=4)
    theirs.cells[1].outputs = [new_output("error", ename="AssertionError", evalue="", traceback=[])]
    theirs.cells[1].execution_count = 2
    theirs.metadata["perfcourse_evidence"] = ["read the clock"]
    theirs.metadata["perfcourse_grading"] = {"grade_cells": 1, "grade_cell_seconds": 0.1, "submission": "abc"}
    return mine, theirs


def test_merge_takes_only_outputs_and_the_graders_records():
    mine, theirs = _graded_pair()
    theirs.metadata["kernelspec"] = {"name": "evil"}
    merge_outputs(mine, theirs)
    assert mine.cells[1].outputs[0]["ename"] == "AssertionError" and mine.cells[1].execution_count == 2
    assert mine.metadata["perfcourse_evidence"] == ["read the clock"]
    assert "kernelspec" not in mine.metadata


@pytest.mark.parametrize("change", ["source", "points", "grade_id", "cells", "evidence", "timing"])
def test_merge_refuses_a_notebook_that_is_not_the_submission(change):
    mine, theirs = _graded_pair()
    if change == "source":
        theirs.cells[1].source = "pass"
    elif change == "points":
        theirs.cells[1].metadata["nbgrader"]["points"] = 200
    elif change == "grade_id":
        theirs.cells[1].metadata["nbgrader"]["grade_id"] = "other"
    elif change == "cells":
        theirs.cells.append(new_code_cell("y = 2"))
    elif change == "evidence":
        theirs.metadata["perfcourse_evidence"] = "none"
    else:
        del theirs.metadata["perfcourse_grading"]
    with pytest.raises(ExecutionRefused):
        merge_outputs(mine, theirs)
    assert mine.cells[1].outputs == []  # nothing of a refused notebook is kept


def test_an_executed_notebook_must_be_valid_and_bounded(monkeypatch):
    with pytest.raises(ExecutionRefused, match="not a valid notebook"):
        parse_executed("{not json")
    with pytest.raises(ExecutionRefused, match="not a valid notebook"):
        parse_executed('{"cells": 3, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}')
    monkeypatch.setattr("perfcourse.grading.replay.MAX_NOTEBOOK_BYTES", 10)
    with pytest.raises(ExecutionRefused, match="larger than"):
        parse_executed(nbformat.writes(new_notebook()))


def _result(**changes):
    result = {"student": "ann", "worker": "tcp://127.0.0.1:1", "host": "h", "pid": 1,
              "lessons": {LESSON: {"seconds": 1.5, "error": None, "notebooks": {f"{LESSON}.ipynb": "{}"}}}}
    result.update(changes)
    return result


def test_a_result_is_checked_for_shape():
    assert cluster.check_result(_result(), "ann", [LESSON])["student"] == "ann"
    bad = [
        _result(student="bob"),
        _result(lessons={}),
        _result(lessons={LESSON: {"seconds": 1, "error": None, "notebooks": {"../../x.ipynb": "{}"}}}),
        _result(lessons={LESSON: {"seconds": 1, "error": None, "notebooks": {}}}),
        _result(lessons={LESSON: {"seconds": "1", "error": None, "notebooks": {}}}),
        _result(lessons={LESSON: {"seconds": 1, "error": None, "notebooks": {"a.ipynb": b"{}"}}}),
        _result(worker=None),
        ["not", "a", "dict"],
    ]
    for result in bad:
        with pytest.raises(cluster.ResultRefused):
            cluster.check_result(result, "ann", [LESSON])
    failed = _result(lessons={LESSON: {"seconds": 0, "error": "kernel died", "notebooks": {}}})
    assert cluster.check_result(failed, "ann", [LESSON])


def test_each_student_is_recorded_once():
    ledger = cluster.Ledger()
    for student in ("ann", "bob", "cy"):
        ledger.expect(student)
    assert ledger.take("ann") and not ledger.take("ann")  # a second completed task records nothing
    assert not ledger.fail("ann", "late failure of a duplicate")
    assert ledger.fail("bob", "killed twice") and not ledger.take("bob")
    assert not ledger.take("dan")  # never asked for
    assert ledger.waiting == {"cy"} and ledger.recorded == {"ann"} and ledger.failed == {"bob": "killed twice"}


class _Future:
    def __init__(self, status, result=None, error=None):
        self.status, self._result, self._error = status, result, error

    def result(self):
        return self._result

    def exception(self):
        return self._error


def test_a_task_that_keeps_failing_is_reported_and_a_late_duplicate_records_nothing(monkeypatch, tmp_path):
    recorded = []
    monkeypatch.setattr(cluster, "record", lambda root, result, progress: recorded.append(result["student"]) or [])
    progress = cluster.Progress(2, stream=open(os.devnull, "w"))
    ledger = cluster.Ledger()
    ledger.expect("ann")
    ledger.expect("bob")
    failed = cluster._settle(tmp_path, _Future("error", error=RuntimeError("bubblewrap is missing")), "bob",
                             [LESSON], ledger, progress, retries=2)
    assert [o.error for o in failed] == [
        "not graded: its task failed 3 times; last: RuntimeError: bubblewrap is missing"]
    cluster._settle(tmp_path, _Future("finished", _result()), "ann", [LESSON], ledger, progress, retries=2)
    cluster._settle(tmp_path, _Future("finished", _result()), "ann", [LESSON], ledger, progress, retries=2)
    assert recorded == ["ann"] and ledger.workers == {"tcp://127.0.0.1:1"}
    refused = cluster.Ledger()
    refused.expect("ann")
    out = cluster._settle(tmp_path, _Future("finished", _result(student="bob")), "ann", [LESSON], refused,
                          progress, retries=2)
    assert "refused" in out[0].error and recorded == ["ann"]
    with pytest.raises(cluster.SchedulerGone, match="went away"):
        cluster._settle(tmp_path, _Future("cancelled"), "cy", [LESSON], ledger, progress, retries=2)


def test_a_worker_without_bubblewrap_refuses_unless_unsandboxed(monkeypatch):
    from perfcourse.grading import sandbox

    monkeypatch.setattr(sandbox, "bubblewrap", lambda: None)
    problems = cluster.check_worker("bwrap", "jax-cpu", cluster.__version__)["problems"]
    assert any("bubblewrap" in p for p in problems)
    assert not cluster.check_worker("none", "jax-cpu", cluster.__version__)["problems"]
    assert any("perfcourse 0.0" in p or "the grader runs 0.0" in p
               for p in cluster.check_worker("none", "jax-cpu", "0.0")["problems"])
    assert any("unknown kernel" in p
               for p in cluster.check_worker("none", "no-such-kernel", cluster.__version__)["problems"])


@pytest.mark.parametrize("relative", ["../x", "/etc/passwd", "a//b", "a/./b", "", "a\\b", "a/\0"])
def test_task_paths_stay_inside(relative, tmp_path):
    with pytest.raises(cluster.ResultRefused):
        cluster.write_tree(tmp_path, [], {relative: b"x"})


def test_task_files_never_follow_a_link(tmp_path):
    (tmp_path / "target").write_text("keep")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        cluster.write_tree(tmp_path, [], {"link": b"overwritten"})
    assert (tmp_path / "target").read_text() == "keep"


def test_a_submission_travels_as_data(tmp_path):
    folder = tmp_path / "sub"
    (folder / "data").mkdir(parents=True)
    (folder / f"{LESSON}.ipynb").write_text("{}")
    (folder / "data" / "x.txt").write_bytes(b"\x00\x01")
    folders, files = scratch.read_submission(folder)
    assert folders == ["data"] and files == {"data/x.txt": b"\x00\x01", f"{LESSON}.ipynb": b"{}"}
    out = tmp_path / "out"
    out.mkdir()
    cluster.write_tree(out, folders, files)
    assert scratch.digest(out, folder / f"{LESSON}.ipynb") == scratch.digest(folder, folder / f"{LESSON}.ipynb")
    (folder / "escape").symlink_to("/etc/passwd")
    with pytest.raises(scratch.SubmissionRefused, match="symbolic link"):
        scratch.read_submission(folder)


def test_the_scratch_course_has_its_own_gradebook_and_stops_after_execution(tmp_path):
    course = cluster.course_files(ROOT, [LESSON])
    assert f"source/{LESSON}/{LESSON}.ipynb" in course and "grader_config.py" in course
    task = {"student": "ann", "course": course,
            "submissions": {LESSON: {"folders": [], "files": {f"{LESSON}.ipynb": b"{}"}}}}
    root = cluster.scratch_course(tmp_path, task)
    loaded = nbgrader_bridge.config(root)
    assert nbgrader_bridge.coursedir(root, loaded).db_url == f"sqlite:///{root / 'gradebook.db'}"
    assert list(loaded.Autograde.autograde_preprocessors) == [cluster.GUARD]
    assert (nbgrader_bridge.folder(root, "submitted", "ann", LESSON) / f"{LESSON}.ipynb").read_bytes() == b"{}"


def test_the_grader_replays_in_place_of_guarded_execute(tmp_path):
    loaded = cluster.replay_config(ROOT, tmp_path)
    steps = list(loaded.Autograde.autograde_preprocessors)
    assert cluster.REPLAY in steps and cluster.GUARD not in steps
    assert steps.index(cluster.REPLAY) < steps.index("nbgrader.preprocessors.SaveAutoGrades")
    course = copy_course(tmp_path / "course")
    with open(course / "grader_config.py", "a") as handle:
        handle.write("c.Autograde.autograde_preprocessors = ['nbgrader.preprocessors.Execute']\n")
    with pytest.raises(CourseError, match="GuardedExecute"):
        cluster.replay_config(course, tmp_path)


def test_the_cluster_option_is_checked():
    with pytest.raises(SystemExit):
        parser().parse_args(["grade", "--cluster", "127.0.0.1:8786"])
    assert parser().parse_args(["grade", "--cluster", "tcp://127.0.0.1:8786"]).cluster == "tcp://127.0.0.1:8786"


def test_the_tls_and_timeout_options_go_with_cluster_and_together(tmp_path):
    def scheduler(*options):
        return _scheduler(parser().parse_args(["grade", *options]))

    files = [tmp_path / name for name in ("ca.pem", "cert.pem", "key.pem")]
    tls = [option for pair in zip(("--tls-ca-file", "--tls-cert", "--tls-key"), map(str, files)) for option in pair]
    assert scheduler() is None
    with pytest.raises(CourseError, match="go with --cluster"):
        scheduler("--scheduler-timeout", "5")
    with pytest.raises(CourseError, match="go together"):
        scheduler("--cluster", "tls://127.0.0.1:8786", *tls[:4])
    for path in files[:2]:
        path.write_text("PEM")
    with pytest.raises(CourseError, match="key.pem: no such TLS file"):
        scheduler("--cluster", "tls://127.0.0.1:8786", *tls)
    files[2].write_text("PEM")
    with pytest.raises(CourseError, match="not a tls:// address"):
        scheduler("--cluster", "tcp://127.0.0.1:8786", *tls)
    chosen = scheduler("--cluster", "tls://127.0.0.1:8786", *tls, "--scheduler-timeout", "7")
    assert chosen.tls == tuple(map(str, files)) and chosen.gone_seconds == 7
    assert chosen.security().require_encryption
    assert scheduler("--cluster", "tcp://127.0.0.1:8786").gone_seconds == cluster.GONE_SECONDS


CLUSTER_PAGE = "docs/instructors/cluster.md"


def _readme_call(function: str) -> dict:
    """The keyword arguments of the call of `function` in the cluster page's deployment snippets
    (docs/instructors/cluster.md, "Deploying workers")."""
    import ast
    import re

    for block in re.findall(r"```python\n(.*?)```", (ROOT / CLUSTER_PAGE).read_text(encoding="utf-8"), re.S):
        tree = ast.parse("\n".join(line[2:] if line.startswith("  ") else line for line in block.splitlines()))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function:
                return {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    raise AssertionError(f"{CLUSTER_PAGE} has no {function}(...) call")


def test_the_readme_slurm_deployment_starts_one_thread_workers_with_room_for_a_kernel():
    from dask_jobqueue.slurm import SLURMJob
    from dask.utils import parse_bytes

    options = _readme_call("SLURMCluster")
    script = SLURMJob(scheduler="tcp://127.0.0.1:8786", name="grading-0", **options).job_script()
    command = script.strip().splitlines()[-1].split()
    assert command[:3] == [options["python"], "-m", "distributed.cli.dask_worker"]
    assert command[command.index("--nthreads") + 1] == "1"  # a task starts two kernels
    limit = parse_bytes(command[command.index("--memory-limit") + 1])
    assert limit >= nbgrader_bridge.config(ROOT).GuardedExecute.memory_bytes + (1 << 30)
    assert f"#SBATCH -t {options['walltime']}" in script


@pytest.mark.slow
def test_an_unreachable_scheduler_is_one_clear_error(monkeypatch):
    from cluster_services import free_port

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1)
    with pytest.raises(CourseError, match="cannot reach the Dask scheduler"):
        cluster.connect(cluster.Scheduler(f"tcp://127.0.0.1:{free_port()}"))


# --- e2e: real kernels, a real Dask cluster and PostgreSQL -----------------------------------------
def _class_course(target: Path, db_url: str | None = None) -> tuple[Path, dict[str, float]]:
    course = copy_course(target)
    if db_url:
        with open(course / "grader_config.py", "a", encoding="utf-8") as handle:
            handle.write(f"\nc.CourseDirectory.db_url = {db_url!r}  # several machines write: PostgreSQL\n")
    release.generate(course, [LESSON])
    chosen = [s for s in samples.discover(course, [LESSON]) if s.case in CASES]
    samples.write_submissions(course, chosen)
    return course, {s.student: sum(s.expected.values()) for s in chosen}


def _grade(course: Path, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perfcourse.cli", "grade", "--lesson", LESSON, *args],
                            cwd=course, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def _finish(process: subprocess.Popen, timeout: float = 900) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return process.returncode, out, err


def _scores(course: Path) -> dict[str, float]:
    with open(course / "grades.csv", newline="") as handle:
        return {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(handle)}


def _nbgrader_export(course: Path, by_lesson: bool = False) -> dict:
    target = course / "exported.csv"
    subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(target)], cwd=course,
                   env=nbgrader_bridge.nbgrader_env(), check=True, capture_output=True)
    with open(target, newline="") as handle:
        return {((row["student_id"], row["assignment"]) if by_lesson else row["student_id"]): float(row["raw_score"])
                for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def gradebook_server():
    if postgres_bin() is None:
        missing = "PostgreSQL is not installed here (.ci/run installs it: apt-get install postgresql)"
        if os.environ.get("CI") == "true":  # CI must run it, as it must run the browser tests
            pytest.fail(missing)
        pytest.skip(missing)
    with postgresql() as url:
        yield url


@pytest.fixture
def two_workers(tmp_path):
    logs = tmp_path / "dask-logs"
    logs.mkdir()
    with dask_cluster(logs, workers=2) as running:
        yield running


@pytest.fixture
def one_worker(tmp_path):
    """For the tests that end the scheduler once grading has started: a second worker would only
    grade what the run then throws away."""
    logs = tmp_path / "dask-logs"
    logs.mkdir()
    with dask_cluster(logs, workers=1) as running:
        yield running


@pytest.fixture
def two_workers_over_tls(tmp_path):
    """Scheduler, workers and grader talk TLS only, with certificates from a CA made for the test."""
    logs, certificates = tmp_path / "dask-logs", tmp_path / "tls"
    logs.mkdir()
    certificates.mkdir()
    with dask_cluster(logs, workers=2, tls=tls_files(certificates)) as running:
        yield running


def _tls_options(running) -> list[str]:
    return ["--tls-ca-file", str(running.tls["ca"]), "--tls-cert", str(running.tls["cert"]),
            "--tls-key", str(running.tls["key"])]


def _wait_for_processing(running, timeout: float = 120) -> dict:
    """{worker address: pid} once some worker holds a grading task; the pids come from the workers."""
    client = running.client()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = [w for w, keys in client.processing().items() if keys]
            if busy:
                pids = client.run(os.getpid)
                return {w: pids[w] for w in busy}
            time.sleep(0.5)
    finally:
        client.close()
    raise AssertionError("no worker started a grading task\n" + running.log())


@pytest.mark.e2e
def test_cluster_into_postgresql_scores_what_the_samples_expect(tmp_path, gradebook_server, two_workers_over_tls):
    """A local run scores every sample as it expects (tests/test_grading.py, the demo class), so
    the cluster must score these the same; the nightly tier compares the whole class both ways."""
    two_workers = two_workers_over_tls
    on_cluster, expected = _class_course(tmp_path / "cluster", gradebook_server)
    assert nbgrader_bridge.db_url(on_cluster).startswith("postgresql://")
    assert two_workers.address.startswith("tls://")
    # A short scheduler timeout: a probe that wrongly took a healthy scheduler for a silent one would
    # end this run (it takes longer than 5 s) with exit 2.
    rc, out, err = _finish(_grade(on_cluster, "--cluster", two_workers.address, *_tls_options(two_workers),
                                  "--scheduler-timeout", "5"))
    assert rc == 0, out + err + two_workers.log()
    assert _scores(on_cluster) == expected  # grades.csv, read back from nbgrader's export
    assert _nbgrader_export(on_cluster) == expected  # plain `nbgrader export` of the PostgreSQL gradebook
    for student, points in expected.items():
        assert nbgrader_bridge.notebook_score(on_cluster, LESSON, student).score == points
        assert (nbgrader_bridge.folder(on_cluster, "autograded", student, LESSON) / f"{LESSON}.ipynb").is_file()
    assert f"on the Dask cluster at {two_workers.address} (2 workers took part)" in out
    assert "3 of 3 notebooks graded now" in out
    assert not (on_cluster / "gradebook.db").exists()  # nothing went to a SQLite gradebook


def _once_kernels_run(pid: int, timeout: float = 180) -> list:
    """The processes below a worker once its grader has started the sandboxed kernels."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        below = psutil.Process(pid).children(recursive=True)
        with contextlib.suppress(psutil.Error):
            # A kernel forked from a fork server names itself; an exec'd one runs ipykernel_launcher.
            kernels = [p for p in below if p.name() in ("student-kernel", "trusted-kernel")
                       or ("ipykernel_launcher" in p.cmdline()[:6] and p.name() != "bwrap")]
            if len(kernels) >= 2:  # the student's and the trusted kernel
                return psutil.Process(pid).children(recursive=True)
        time.sleep(0.5)
    raise AssertionError("the worker's grader started no kernels")


@pytest.mark.e2e
@pytest.mark.nightly  # about a minute on 2 cores: make test stays under ten minutes on CI's machine
def test_a_worker_killed_mid_task_loses_no_student(tmp_path, gradebook_server, two_workers):
    course, expected = _class_course(tmp_path / "course", gradebook_server)
    grading = _grade(course, "--cluster", two_workers.address)
    try:
        busy = _wait_for_processing(two_workers)
        address, pid = sorted(busy.items())[0]
        below = _once_kernels_run(pid)
        os.kill(pid, signal.SIGKILL)
        _, alive = psutil.wait_procs(below, timeout=30)  # its grader, launchers, bubblewrap, kernels
        assert not alive, f"left running after their worker died: {[p.cmdline()[:3] for p in alive]}"
        rc, out, err = _finish(grading)
    finally:
        if grading.poll() is None:
            grading.kill()
    assert rc == 0, out + err + two_workers.log()
    assert _scores(course) == expected
    assert _nbgrader_export(course) == expected
    assert "1 worker took part" in out  # every result came from the worker still alive


@pytest.mark.e2e
def test_the_scheduler_going_away_ends_the_run_with_nothing_half_written(tmp_path, one_worker):
    course, expected = _class_course(tmp_path / "course")  # SQLite: grading on a cluster needs no server
    grading = _grade(course, "--cluster", one_worker.address)
    try:
        _wait_for_processing(one_worker)
        one_worker.scheduler.kill()
        rc, out, err = _finish(grading, timeout=300)
    finally:
        if grading.poll() is None:
            grading.kill()
    assert rc == 2, out + err
    assert f"the Dask scheduler at {one_worker.address} went away" in err
    assert "Traceback" not in err
    _whole_or_not_at_all(course, expected)


@pytest.mark.e2e
@pytest.mark.nightly  # local runs' interruption is in make test (tests/test_grade_interrupted.py)
def test_an_interrupted_cluster_run_stops_at_once_and_the_next_run_grades_the_class(tmp_path, one_worker):
    """SIGTERM (a job's time limit) or Ctrl-C ends a run on a cluster as it ends a local one: exit
    130 within seconds, nothing half-written; a task under way ends on its worker unrecorded,
    and the next run grades the whole class as it should."""
    course, expected = _class_course(tmp_path / "course")
    grading = _grade(course, "--cluster", one_worker.address)
    try:
        _wait_for_processing(one_worker)
        grading.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        rc, out, err = _finish(grading, timeout=120)
        took = time.monotonic() - stopped
    finally:
        if grading.poll() is None:
            grading.kill()
    assert rc == 130 and "interrupted" in err, out + err
    assert "Traceback" not in err
    assert took < 30, f"the run stopped {took:.0f} s after SIGTERM"
    _whole_or_not_at_all(course, expected)
    rc, out, err = _finish(_grade(course, "--cluster", one_worker.address))
    assert rc == 0, out + err + one_worker.log()
    assert _scores(course) == expected


def _whole_or_not_at_all(course: Path, expected: dict[str, float]) -> None:
    for student in expected:
        score = nbgrader_bridge.notebook_score(course, LESSON, student)
        notebook = nbgrader_bridge.folder(course, "autograded", student, LESSON) / f"{LESSON}.ipynb"
        if score is None:
            assert not notebook.exists()
        else:
            assert score.score == expected[student] and notebook.is_file()


@pytest.mark.e2e
def test_a_scheduler_that_stops_answering_ends_the_run(tmp_path, one_worker):
    """A stopped (or hung) scheduler keeps its connections open: the run must notice the silence."""
    course, expected = _class_course(tmp_path / "course")
    grading = _grade(course, "--cluster", one_worker.address, "--scheduler-timeout", "6")
    stopped = None
    try:
        _wait_for_processing(one_worker)
        os.kill(one_worker.scheduler.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        rc, out, err = _finish(grading, timeout=300)
        took = time.monotonic() - stopped
    finally:
        if stopped is not None:
            os.kill(one_worker.scheduler.pid, signal.SIGCONT)  # so that it can be stopped for good
        if grading.poll() is None:
            grading.kill()
    assert rc == 2, out + err
    assert f"the Dask scheduler at {one_worker.address} stopped answering" in err
    assert "Traceback" not in err
    assert took < 90, f"the run noticed the silence after {took:.0f} s (timeout 6 s)"
    _whole_or_not_at_all(course, expected)


def _graded_rows(grades_csv: str) -> dict[tuple[str, str], float]:
    """(student, lesson) -> raw score of every notebook a grades.csv says was graded."""
    return {(row["student_id"], row["assignment"]): float(row["raw_score"])
            for row in csv.DictReader(io.StringIO(grades_csv)) if not row["error"]}


@pytest.mark.nightly
def test_the_demo_class_on_a_tls_cluster_into_postgresql_scores_as_the_local_demo(
        tmp_path, graded_demo, gradebook_server, two_workers_over_tls):
    """The whole demo class (every sample of every lesson) through the cluster: `perfcourse demo
    --cluster` checks each score against its sample, and every score equals the local demo's."""
    _, local_run, local_grades = graded_demo
    assert local_run.returncode == 0, local_run.stdout + local_run.stderr
    running = two_workers_over_tls
    course = copy_course(tmp_path / "course")
    with open(course / "grader_config.py", "a", encoding="utf-8") as handle:
        handle.write(f"\nc.CourseDirectory.db_url = {gradebook_server!r}\n")
    proc = subprocess.run([sys.executable, "-m", "perfcourse.cli", "demo", "--quick", "--cluster", running.address,
                           *_tls_options(running)], cwd=course, text=True, capture_output=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:] + running.log()
    assert "sample submissions scored as expected" in proc.stdout
    assert "(2 workers took part)" in proc.stdout
    local = _graded_rows(local_grades)
    on_cluster = _graded_rows((course / "grades.csv").read_text())
    quick = [s for s in samples.discover(course) + samples.discover(course, folder="adversarial", prefix="hostile")
             if not s.nightly and (s.prefix == "sample" or s.demo)]  # what the local demo graded too
    assert len(local) == len(quick) - sum(s.expected is None for s in quick)
    assert on_cluster == local
    exported = _nbgrader_export(course, by_lesson=True)  # also lists each student's lessons without a submission
    assert {key: exported.get(key) for key in on_cluster} == on_cluster
