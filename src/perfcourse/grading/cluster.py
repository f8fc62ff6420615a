"""Grading a class on a Dask cluster: `perfcourse grade --cluster tcp://HOST:PORT`.

One Dask task per student carries plain data: that student's submitted files for every lesson to
grade, and the course files grading needs (the configuration and the lessons' source folders).
On a worker, `grade_student` lays them out in a private scratch course in a temporary folder,
whose lessons are recorded in its own SQLite gradebook (nbgrader generate_assignment), and runs
the course's grading worker there (grading/worker.py: nbgrader autograde with GuardedExecute,
the same two sandboxed kernels and limits as a local run). The scratch course and its grading
workers (with their trusted kernels) are kept on the Dask worker for the run's next tasks
(`KeptCourse`), as the local pool keeps its workers; each task's student is removed from it once
graded, and the worker's next lesson is queued while it grades, so it starts that kernel ahead.
It sends back each lesson's executed
notebook as JSON text, its error and its time: no shared filesystem, nothing pickled but dicts,
lists, strings and bytes.

The course's own machine alone writes autograded/ and the gradebook: for each student, in one
thread, nbgrader autograde runs with `ReplayExecution` in GuardedExecute's place (grading/
replay.py), so nbgrader's own code records the grades at the course's db_url (SQLite on one
machine, PostgreSQL where several do) and `nbgrader export`, the table and grades.csv agree.

Faults: a worker that dies mid-task loses nobody (the scheduler runs the task again elsewhere);
a student's results are recorded once, from the first completed task (`Ledger`); a student is
never graded twice at once (a cluster-wide `distributed.Lock` per course and student around the
grading); a task that keeps failing is reported with its reason; a scheduler that goes away ends
the run with an error, and whatever was recorded before is whole (students are recorded one at a
time, each only once its task has returned).
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .. import startup  # noqa: F401,I001 (a Dask worker imports this module to run grade_student)
from .. import __version__
from .. import nbgrader_bridge as nbgrader
from ..course import CONFIG_FILES, CourseError, write_atomic
from . import scratch
from .worker_slot import Outcome, Progress, WorkerSlot, notebook_limit

GUARD = "perfcourse.grading.execute.GuardedExecute"
REPLAY = "perfcourse.grading.replay.ReplayExecution"
RETRIES = 2            # a task that raised is tried this many more times (a dead worker is retried by the scheduler)
CONNECT_SECONDS = 30   # to reach the scheduler at the start
GONE_SECONDS = 60      # the scheduler unreachable, or connected but silent, this long mid-run ends the run
POLL_SECONDS = 2
PROBE_SECONDS = 10     # how often a waiting run checks that the scheduler still answers
NOTEBOOK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\.ipynb")


class ResultRefused(ValueError):
    """What came back from a worker is not the shape a grading task returns."""


@dataclass(frozen=True)
class Scheduler:
    """Where the Dask scheduler is and how to talk to it (perfcourse grade --cluster ...).

    `tls`: (CA file, certificate, private key) in PEM files, for a tls:// scheduler whose workers
    present certificates from that CA; without them a tls:// address takes its certificates from
    Dask's own configuration (distributed.comm.tls.*). `gone_seconds`: how long the scheduler may be
    unreachable, or connected and silent (a stopped or hung process), before the run ends."""
    address: str
    tls: tuple[str, str, str] | None = None
    gone_seconds: float = GONE_SECONDS

    def __post_init__(self):
        if self.tls and not self.address.startswith("tls://"):
            raise CourseError(f"TLS certificates were given, but {self.address} is not a tls:// address")
        for path in self.tls or ():
            if not os.path.isfile(path):
                raise CourseError(f"{path}: no such TLS file (--tls-ca-file, --tls-cert and --tls-key name PEM files)")

    def security(self):
        if not self.tls:
            return None  # Dask's configuration (plain tcp://, or its distributed.comm.tls settings)
        from distributed.security import Security

        ca_file, cert, key = self.tls
        return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True)


# --- the task: built on the course's machine, run on a worker -----------------------------------
def course_files(root: Path, lessons: list[str]) -> dict[str, bytes]:
    """The course files a worker needs to grade these lessons: configuration and source folders."""
    files = {name: (root / name).read_bytes() for name in CONFIG_FILES if (root / name).is_file()}
    for lesson in lessons:
        source = nbgrader.folder(root, "source", ".", lesson)
        for path in sorted(source.rglob("*")):
            if path.is_file() and not path.is_symlink() and ".ipynb_checkpoints" not in path.parts:
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def build_task(root: Path, student: str, lessons: list[str], course: dict[str, bytes], course_id: str,
               sandbox: str, cell_timeout: int | None) -> dict:
    submissions = {}
    for lesson in lessons:
        folders, files = scratch.read_submission(nbgrader.folder(root, "submitted", student, lesson))
        submissions[lesson] = {"folders": folders, "files": files}
    return {"student": student, "course_id": course_id, "course": course, "submissions": submissions,
            "sandbox": sandbox, "cell_timeout": cell_timeout, "version": __version__}


def safe_relative(relative: str) -> str:
    """A relative path from a task, refused unless it stays inside the folder it is laid out in."""
    parts = relative.split("/") if isinstance(relative, str) else []
    if not parts or any(p in ("", ".", "..") or "\0" in p or "\\" in p for p in parts) \
            or len(relative) > 1000:
        raise ResultRefused(f"not a relative path inside the course: {scratch.shown(str(relative))}")
    return relative


def write_tree(base: Path, folders: list[str], files: dict[str, bytes]) -> None:
    """Lay out folders and files under `base`, never following or replacing anything already there."""
    for relative in folders:
        (base / safe_relative(relative)).mkdir(parents=True, exist_ok=True)
    for relative, data in files.items():
        target = base / safe_relative(relative)
        if not isinstance(data, bytes):
            raise ResultRefused(f"{scratch.shown(relative)}: file contents must be bytes")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)


def scratch_course(base: Path, task: dict) -> Path:
    """The task's private course: its files, the student's submissions, its own SQLite gradebook,
    and a pipeline that stops after GuardedExecute (the grades are recorded on the course's machine)."""
    root = base / "course"
    root.mkdir()
    write_tree(root, [], task["course"])
    with open(root / "nbgrader_config.py", "a", encoding="utf-8") as handle:
        handle.write("\n# perfcourse grade --cluster: this scratch course's own gradebook; execution only.\n"
                     f"c.CourseDirectory.db_url = {('sqlite:///' + str(root / 'gradebook.db'))!r}\n"
                     f"c.Exchange.root = {str(root / 'exchange')!r}\n"
                     f"c.Autograde.autograde_preprocessors = [{GUARD!r}]\n")
    lay_out_student(root, task)
    return root


def lay_out_student(root: Path, task: dict) -> None:
    """The task's student's submissions in the scratch course, in place of any earlier ones."""
    student = safe_relative(task["student"])
    remove_student(root, student)
    for lesson, submission in task["submissions"].items():
        folder = nbgrader.folder(root, "submitted", student, safe_relative(lesson))
        folder.mkdir(parents=True)
        write_tree(folder, submission["folders"], submission["files"])


def remove_student(root: Path, student: str) -> None:
    for step in ("submitted", "autograded"):
        shutil.rmtree(nbgrader.step(root, step) / student, ignore_errors=True)


@dataclass
class KeptCourse:
    """A scratch course kept on this Dask worker for the tasks of one run of one course (same
    files, sandbox, limits and version): its lessons recorded once, and its grading workers, with
    their trusted kernels, kept from one task to the next as the local pool keeps them. Each
    task's student is laid out in it and removed once that task's results are read."""
    base: Path
    root: Path
    options: list[str]           # a grading worker's options, without --generate
    generate: list[str]          # lessons the first worker records in the gradebook
    idle: list[WorkerSlot] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def slot(self) -> WorkerSlot:
        """An idle grading worker, or a new one (the first records the lessons first)."""
        with self.lock:
            if self.idle:
                return self.idle.pop()
            if self.generate:  # under the lock: recorded once, before any other worker grades
                slot = WorkerSlot(self.root, self.options + [f"--generate={lesson}" for lesson in self.generate])
                slot.start()
                self.generate = []
                slot.options = self.options  # started again after a crash: the lessons are recorded
                return slot
        slot = WorkerSlot(self.root, self.options)
        slot.start()
        return slot

    def give_back(self, slot: WorkerSlot) -> None:
        if not slot.running:
            slot.close()
            return
        with self.lock:
            self.idle.append(slot)

    def close(self) -> None:
        with self.lock:
            slots, self.idle = self.idle, []
        for slot in slots:
            slot.close()
        shutil.rmtree(self.base, ignore_errors=True)


_kept: dict[str, KeptCourse] = {}
_kept_lock = threading.Lock()


def kept_course(task: dict) -> KeptCourse:
    """This worker's scratch course for the task's course files and settings, made on first use."""
    key = hashlib.sha256()
    for part in (task["course_id"], task["sandbox"], str(task.get("cell_timeout")), task.get("version", "")):
        key.update(part.encode() + b"\0")
    for name in sorted(task["course"]):
        key.update(name.encode() + b"\0" + hashlib.sha256(task["course"][name]).digest())
    key = key.hexdigest()
    with _kept_lock:
        course = _kept.get(key)
        if course is None:
            if not _kept:
                atexit.register(_close_kept)
            base = Path(tempfile.mkdtemp(prefix="perfcourse-cluster-"))
            root = scratch_course(base, {**task, "submissions": {}})
            options = ["--sandbox", task["sandbox"], "--die-with-parent", str(os.getpid())]
            options += ["--cell-timeout", str(task["cell_timeout"])] if task.get("cell_timeout") else []
            lessons = sorted(p.name for p in nbgrader.step(root, "source").iterdir() if p.is_dir())
            course = _kept[key] = KeptCourse(base, root, options, lessons)
        return course


def _close_kept() -> None:
    with _kept_lock:
        courses = list(_kept.values())
        _kept.clear()
    for course in courses:
        course.close()


def grade_student(task: dict) -> dict:
    """The Dask task: grade one student's lessons on this worker, return plain data (see module doc)."""
    from distributed import Lock, get_worker

    try:
        address = get_worker().address
    except ValueError:  # called outside a worker (tests)
        address = "local"
    student, lessons = task["student"], sorted(task["submissions"])
    if task.get("version") != __version__:
        raise RuntimeError(f"this worker has perfcourse {__version__}, the grader {task.get('version')}")
    # Cluster-wide: a task run twice (a worker presumed dead that was not), or two graders of the
    # same course on one cluster, never grade one student at the same time.
    lock = Lock(f"perfcourse-grade/{task['course_id']}/{student}") if address != "local" else None
    if lock is not None:
        lock.acquire()
    try:
        course = kept_course(task)
        root = course.root
        lay_out_student(root, task)
        limit = notebook_limit(root)
        slot = course.slot()
        results, sent = {}, False
        try:
            for index, lesson in enumerate(lessons):
                if not sent:
                    slot.send(student, [lesson])
                # The next lesson is queued now, so the worker starts its kernel ahead.
                sent = index + 1 < len(lessons)
                if sent:
                    slot.send(student, [lessons[index + 1]])
                outcome = slot.collect(student, [lesson], limit, _Quiet())[0]
                sent = sent and slot.running  # else lost with a worker that died: sent again
                results[lesson] = {"seconds": outcome.seconds, "error": outcome.error,
                                   "notebooks": {} if outcome.error else _executed(root, student, lesson)}
        finally:
            course.give_back(slot)
            remove_student(root, safe_relative(student))
    finally:
        if lock is not None:
            lock.release()
    return {"student": student, "worker": address, "host": socket.gethostname(), "pid": os.getpid(),
            "lessons": results}


class _Quiet:
    def advance(self, label: str) -> None:
        pass


def _executed(root: Path, student: str, lesson: str) -> dict[str, str]:
    folder = nbgrader.folder(root, "autograded", student, lesson)
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.ipynb"))
            if p.is_file() and not p.is_symlink()}


def check_worker(sandbox: str, kernel: str, version: str) -> dict:
    """Run on every worker before grading: can it grade as a local run would?"""
    from .. import kernels
    from . import sandbox as bwrap

    problems, warnings = [], []
    if version != __version__:
        problems.append(f"perfcourse {__version__} is installed, the grader runs {version}")
    if sandbox == "bwrap":
        if not bwrap.bubblewrap():
            problems.append("bubblewrap (bwrap) is not installed, so student code cannot be sandboxed "
                            "(install it, or grade with --unsandboxed)")
        else:
            warnings += bwrap.bounds_available()
    try:
        kernels.require(kernel)
    except CourseError as exc:
        problems.append(str(exc))
    return {"host": socket.gethostname(), "problems": problems, "warnings": warnings}


def check_result(result, student: str, lessons: list[str]) -> dict:
    """A task's return value, checked for shape; ResultRefused names the first fault."""
    if not isinstance(result, dict) or result.get("student") != student:
        raise ResultRefused("the task returned something other than this student's results")
    graded = result.get("lessons")
    if not isinstance(graded, dict) or sorted(graded) != sorted(lessons):
        raise ResultRefused("the task returned other lessons than it was given")
    for lesson, entry in graded.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("seconds"), (int, float)) \
                or not isinstance(entry.get("error"), (str, type(None))) \
                or not isinstance(entry.get("notebooks"), dict):
            raise ResultRefused(f"the result for {lesson} is malformed")
        for name, text in entry["notebooks"].items():
            if not isinstance(name, str) or not NOTEBOOK_NAME.fullmatch(name) or not isinstance(text, str):
                raise ResultRefused(f"the result for {lesson} names a notebook badly: {scratch.shown(str(name))}")
        if entry["error"] is None and not entry["notebooks"]:
            raise ResultRefused(f"the result for {lesson} has neither a notebook nor an error")
    if not isinstance(result.get("worker"), str):
        raise ResultRefused("the result does not name its worker")
    return result


# --- the run: on the course's machine ------------------------------------------------------------
@dataclass
class Ledger:
    """Which students are still owed a result; each is recorded once, from the first result that
    completes (a task run again after its worker died, or run twice by the scheduler, records nothing)."""
    waiting: set[str] = field(default_factory=set)
    recorded: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    workers: set[str] = field(default_factory=set)

    def expect(self, student: str) -> None:
        self.waiting.add(student)

    def take(self, student: str) -> bool:
        """True the first time a student's result may be recorded; False ever after."""
        if student not in self.waiting:
            return False
        self.waiting.discard(student)
        self.recorded.add(student)
        return True

    def fail(self, student: str, reason: str) -> bool:
        if student not in self.waiting:
            return False
        self.waiting.discard(student)
        self.failed[student] = reason
        return True


@dataclass
class ClusterRun:
    outcomes: list[Outcome]
    workers: set[str]          # the workers whose results were recorded
    workers_seen: int          # the workers the scheduler had when grading began


def replay_config(root: Path, executed: Path):
    """The course's configuration, with the execution step reading what the worker executed."""
    loaded = nbgrader.config(root)
    steps = list(loaded.Autograde.autograde_preprocessors)
    names = [step if isinstance(step, str) else f"{step.__module__}.{step.__qualname__}" for step in steps]
    if GUARD not in names:
        raise CourseError(f"{root / 'grader_config.py'}: Autograde.autograde_preprocessors has no {GUARD}, "
                          "which grading on a cluster replaces with what the workers executed")
    steps[names.index(GUARD)] = REPLAY
    loaded.Autograde.autograde_preprocessors = steps
    loaded.ReplayExecution.executed = str(executed)
    return loaded


def record(root: Path, result: dict, progress: Progress) -> list[Outcome]:
    """One student's results into autograded/ and the gradebook, through nbgrader autograde."""
    import warnings

    student, outcomes = result["student"], []
    with tempfile.TemporaryDirectory(prefix="perfcourse-executed-") as executed, warnings.catch_warnings():
        # nbgrader's gradebook code trips SQLAlchemy's autoflush warnings; its own CLI shows them
        # nowhere either (a local run's workers keep them off the terminal).
        warnings.filterwarnings("ignore", module="nbgrader")
        loaded = replay_config(root, Path(executed))
        for lesson, entry in sorted(result["lessons"].items()):
            outcome = Outcome(student, lesson, seconds=float(entry["seconds"]), error=entry["error"],
                              worker=result["worker"])
            if outcome.error is None:
                folder = Path(executed) / student / lesson
                folder.mkdir(parents=True)
                for name, text in entry["notebooks"].items():
                    write_atomic(folder / name, text)
                started = time.perf_counter()
                try:
                    outcome.error = (nbgrader.autograde(root, lesson, student, loaded)
                                     or _replayed(root, student, lesson))
                except Exception as exc:  # one lesson's failure costs no other lesson
                    outcome.error = f"{type(exc).__name__}: {exc}"
                outcome.seconds += time.perf_counter() - started
            outcomes.append(outcome)
            progress.advance(f"{student}/{lesson}")
    return outcomes


def _replayed(root: Path, student: str, lesson: str) -> str | None:
    """None when every notebook nbgrader wrote carries the worker's execution (an unexecuted
    notebook would score every grade cell as passed); else why not."""
    import nbformat

    from .execute import TIMING_KEY

    for path in sorted(nbgrader.folder(root, "autograded", student, lesson).glob("*.ipynb")):
        if not isinstance(nbformat.read(path, as_version=4).metadata.get(TIMING_KEY), dict):
            return f"{path.name} was recorded without the worker's execution"
    return None


def connect(scheduler: Scheduler):
    from distributed import Client

    try:
        return Client(scheduler.address, timeout=CONNECT_SECONDS, set_as_default=False,
                      security=scheduler.security())
    except (OSError, TimeoutError) as exc:
        raise CourseError(f"cannot reach the Dask scheduler at {scheduler.address}: {exc}") from None


def answers(client, seconds: float) -> bool:
    """Does the scheduler answer a request within `seconds`? A stopped or hung scheduler keeps its
    connections open, so the client still reports "running" while nothing comes back."""
    try:
        client.sync(client.scheduler.identity, callback_timeout=seconds)
        return True
    except Exception:  # TimeoutError, a closed connection: not answering either way
        return False


def check_workers(client, sandbox: str, kernel: str) -> int:
    """Every worker can grade (perfcourse at this version, bubblewrap unless unsandboxed, the kernel)."""
    workers = client.scheduler_info(n_workers=-1)["workers"] if _takes_n_workers(client) \
        else client.scheduler_info()["workers"]
    if not workers:
        raise CourseError(f"the Dask scheduler at {client.scheduler.address} has no workers")
    answers = client.run(check_worker, sandbox, kernel, __version__, on_error="return")
    problems = []
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            problems.append(f"{worker}: cannot run perfcourse's grading ({type(answer).__name__}: {answer})")
            continue
        problems += [f"{worker} ({answer['host']}): {p}" for p in answer["problems"]]
        for warning in answer["warnings"]:
            print(f"WARNING: {worker} ({answer['host']}): {warning}", file=sys.stderr)
    if problems:
        raise CourseError("workers that cannot grade: " + "; ".join(problems))
    return len(answers)


def _takes_n_workers(client) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def grade(root: Path, gradable: dict[str, list[str]], scheduler: Scheduler, sandbox: str,
          cell_timeout: int | None, progress: Progress, retries: int = RETRIES) -> ClusterRun:
    """Grade `gradable` ({student: [lessons]}) on the cluster; record each student once."""
    loaded = nbgrader.config(root)
    course_id = nbgrader.coursedir(root, loaded).course_id
    course = course_files(root, sorted({lesson for names in gradable.values() for lesson in names}))
    with _quiet_dask():
        return _grade(root, gradable, scheduler, sandbox, cell_timeout, progress, retries, course, course_id,
                      loaded.Execute.kernel_name)


@contextlib.contextmanager
def _quiet_dask():
    """Dask's client logs every failed reconnection with a traceback; this run reports what went
    wrong itself (a scheduler gone, a worker lost, a task failed), in one line each."""
    import logging

    import distributed  # noqa: F401 (its logging is set up on import)

    names = [name for name in logging.root.manager.loggerDict if name.split(".")[0] in ("distributed", "tornado")]
    handlers = [h for name in names for h in logging.getLogger(name).handlers]
    levels = [h.level for h in handlers]
    for handler in handlers:
        handler.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for handler, level in zip(handlers, levels):
            handler.setLevel(level)


def _grade(root, gradable, scheduler, sandbox, cell_timeout, progress, retries, course, course_id, kernel):
    from distributed import wait
    from distributed.utils import CancelledError

    address = scheduler.address
    client = connect(scheduler)
    ledger, outcomes = Ledger(), []
    try:
        seen = check_workers(client, sandbox, kernel)
        futures = {}
        run_id = uuid.uuid4().hex[:8]
        for student, lessons in gradable.items():
            task = build_task(root, student, lessons, course, course_id, sandbox, cell_timeout)
            key = f"perfcourse-grade-{run_id}-{hashlib.sha256(student.encode()).hexdigest()[:12]}"
            futures[client.submit(grade_student, task, key=key, retries=retries, pure=False)] = student
            ledger.expect(student)
        pending, unreachable_since = set(futures), None
        # A silent scheduler is asked often enough to be noticed within its timeout.
        probe_every = min(PROBE_SECONDS, scheduler.gone_seconds / 3)
        silent_since, probed = None, time.monotonic()
        while pending:
            try:
                with client.as_current():
                    done, pending = wait(pending, timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            except CancelledError:  # the scheduler dropped them: it is gone
                raise SchedulerGone(address, ledger) from None
            if client.status != "running":  # reconnecting, or given up
                unreachable_since = unreachable_since or time.monotonic()
                if client.status in ("closed", "closing") or \
                        time.monotonic() - unreachable_since > scheduler.gone_seconds:
                    raise SchedulerGone(address, ledger)
                continue
            unreachable_since = None
            if not done and time.monotonic() - probed >= probe_every:
                probed = time.monotonic()
                if answers(client, probe_every):
                    silent_since = None
                elif time.monotonic() - (silent_since := silent_since or probed) > scheduler.gone_seconds:
                    raise SchedulerGone(address, ledger, silent=True)
            for future in done:
                student = futures[future]
                outcomes += _settle(root, future, student, gradable[student], ledger, progress, retries)
        return ClusterRun(outcomes, ledger.workers, seen)
    finally:
        try:
            client.close(timeout=5)
        except Exception:
            pass


def _settle(root, future, student, lessons, ledger: Ledger, progress, retries) -> list[Outcome]:
    if future.status == "finished":
        try:
            result = check_result(future.result(), student, lessons)
        except ResultRefused as exc:
            reason = f"not graded: the worker's result was refused ({exc})"
        else:
            if not ledger.take(student):
                return []
            ledger.workers.add(result["worker"])
            return record(root, result, progress)
    else:
        if future.status == "cancelled":
            raise SchedulerGone(None, ledger)
        exc = future.exception()
        reason = f"not graded: its task failed {retries + 1} times; last: {type(exc).__name__}: {exc}"[:400]
    if not ledger.fail(student, reason):
        return []
    for lesson in lessons:
        progress.advance(f"{student}/{lesson}")
    return [Outcome(student, lesson, error=reason) for lesson in lessons]


class SchedulerGone(CourseError):
    def __init__(self, address: str | None, ledger: Ledger, silent: bool = False):
        recorded, waiting = len(ledger.recorded), len(ledger.waiting)
        gone = "stopped answering (connected, but silent)" if silent else "went away"
        super().__init__(
            f"the Dask scheduler{' at ' + address if address else ''} {gone} mid-run: "
            f"{recorded} student(s) were graded and recorded whole, {waiting} not graded "
            "(nothing of theirs was written); start the scheduler again and rerun: "
            "what was recorded is up to date and is not graded again")
