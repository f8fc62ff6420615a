"""submitted/ -> autograded/ + gradebook, for a whole class: parallel, sandboxed, reported.

`grade_class` checks every submission folder first (a missing, renamed or corrupt notebook, a
link, a pipe or a device where only regular files and folders belong, or too many files: each is
reported, never handed to nbgrader), then keeps a pool of worker processes busy, one notebook
at a time each, student by student. The pool starts with two workers per core and grows while the
cores idle (grading/demand.py; `workers` fixes its size).
Each worker grades one notebook at a time and is sent its next one while it grades, so it starts
that notebook's kernel ahead (grading/ready_kernel.py). A worker that crashes or outlives its time
limit is killed; that notebook is reported as not graded, with the reason, the one queued behind
it is given out again, and a fresh worker carries on, so no other grade is lost.
"""
from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from .. import nbgrader_bridge as nbgrader
from ..course import CourseError, read_notebook
from ..course import lessons as course_lessons
from ..kernel.evidence import EVIDENCE_KEY
from . import bounded_read, demand, losses, scratch
from .worker_slot import INTERRUPT_GRACE, Outcome, Progress, WorkerSlot, notebook_limit, student_memory

if TYPE_CHECKING:
    from .cluster import Scheduler


def survey(root: Path, lessons: list[str], only: list[str] | None = None
           ) -> tuple[dict[str, list[str]], list[Outcome]]:
    """Students' gradable lessons, and the submissions that cannot be graded, with why.

    Nothing a student made is followed: a student or lesson folder that is a link, or a lesson
    folder holding anything but regular files and folders (a link, a pipe, a device) or too much,
    is refused here and never handed to nbgrader. With `only`, just those students. When the
    course sets Autograde.create_student = False, a student the gradebook does not list is
    refused, as nbgrader would.
    """
    gradable, refused = {}, []
    folder = nbgrader.step(root, "submitted")
    registered = None if nbgrader.creates_students(root) else nbgrader.students(root)
    known = course_lessons(root)
    for student in _students(folder, lessons, refused, only):
        for stray in losses.stray_lessons(student, known):  # a misnamed lesson: never graded, never silent
            refused.append(Outcome(student.name, stray, error=losses.stray_note(student.name, stray, known)))
        if registered is not None and student.name not in registered:
            refused.extend(Outcome(student.name, lesson, error="not in the gradebook's student list "
                                   "(Autograde.create_student is False): add the student with "
                                   "'nbgrader db student add'") for lesson in lessons
                           if (student / lesson).is_dir())
            continue
        for lesson in lessons:
            where = student / lesson
            try:
                entry = os.lstat(where)
            except FileNotFoundError:
                continue
            label = f"submitted/{scratch.shown(student.name)}/{lesson}/"
            if stat.S_ISLNK(entry.st_mode):
                refused.append(Outcome(student.name, lesson, error=f"refused {label}: it is a symbolic link"))
                continue
            if not stat.S_ISDIR(entry.st_mode):
                continue  # a stray file named like a lesson, as before: not a submission
            try:
                scratch.check_submission(where)
            except scratch.SubmissionRefused as exc:
                refused.append(Outcome(student.name, lesson, error=f"refused {label}: {exc}"))
                continue
            notebook = where / f"{lesson}.ipynb"
            if not notebook.is_file():
                found = sorted(p.name for p in where.glob("*.ipynb"))
                reason = (f"no {lesson}.ipynb in {label}"
                          + (f" (found {', '.join(scratch.shown(n) for n in found)}: a renamed notebook?)"
                             if found else " (empty)"))
                refused.append(Outcome(student.name, lesson, error=reason))
                continue
            try:
                bounded_read.check_notebook(notebook)  # parsed in a bounded process, never here (issue 51)
            except scratch.SubmissionRefused as exc:
                refused.append(Outcome(student.name, lesson, error=f"refused {label}{lesson}.ipynb: {exc}"))
                continue
            except CourseError as exc:
                refused.append(Outcome(student.name, lesson, error=str(exc).replace(str(root) + "/", "")))
                continue
            gradable.setdefault(student.name, []).append(lesson)
    return gradable, refused


def _students(folder: Path, lessons: list[str], refused: list[Outcome], only: list[str] | None) -> list[Path]:
    """The real folders in submitted/; a student entry that is a link is refused for every lesson."""
    if not folder.is_dir():
        return []
    students = []
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if only is not None and entry.name not in only:
                continue
            if entry.is_dir(follow_symlinks=False):
                students.append(Path(entry.path))
            elif entry.is_symlink():
                refused.extend(Outcome(entry.name, lesson, error=f"refused submitted/{scratch.shown(entry.name)}: "
                                                                 "it is a symbolic link")
                               for lesson in lessons)
    return students


def submission_digest(root: Path, student: str, lesson: str) -> str | None:
    try:
        return scratch.digest(nbgrader.folder(root, "submitted", student, lesson),
                              nbgrader.folder(root, "source", ".", lesson) / f"{lesson}.ipynb")
    except (CourseError, OSError):
        return None


def graded_unchanged(root: Path, student: str, lesson: str) -> bool:
    """Graded before, and the submission is the one graded (same digest)."""
    from .execute import TIMING_KEY

    nb = _autograded(root, student, lesson)
    graded = (nb.metadata.get(TIMING_KEY) or {}).get("submission") if nb is not None else None
    return isinstance(graded, str) and graded == submission_digest(root, student, lesson)


def up_to_date(root: Path, student: str, lesson: str) -> bool:
    """Graded before, the submission unchanged since, and nbgrader has its score."""
    return (student, lesson) in up_to_date_among(root, [(student, lesson)])


def up_to_date_among(root: Path, submissions: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (student, lesson) submissions that are up to date, their scores read in one gradebook session."""
    unchanged = [(student, lesson) for student, lesson in submissions if graded_unchanged(root, student, lesson)]
    scored = nbgrader.notebook_scores(root, unchanged) if unchanged else {}
    return {submission for submission, score in scored.items() if score is not None}


def grade_class(root: Path, lessons: list[str], workers: int | None = None, sandbox: str = "bwrap",
                cell_timeout: int | None = None, students: list[str] | None = None,
                force: bool = False, cluster: Scheduler | None = None) -> list[Outcome]:
    """Grade what needs grading (everything with `force`), then report every submission in view.

    Locally, on `workers` worker processes; with `cluster` (grading.cluster.Scheduler: a Dask
    scheduler's address, TLS files and timeout), on that cluster's workers, one task per student
    (grading/cluster.py)."""
    gradable, refused = survey(root, lessons, students)
    submitted = nbgrader.step(root, "submitted")
    absent = sorted(set(students or []) - set(gradable) - {o.student for o in refused})
    if absent:
        raise CourseError(f"{submitted}: no submissions of {', '.join(map(repr, absent))} "
                          f"for {', '.join(lessons)}")
    if not gradable and not refused:
        raise CourseError(f"{submitted}: no submissions to grade")
    _require_assignments(root, sorted({lesson for names in gradable.values() for lesson in names}))
    options = ["--sandbox", sandbox] + (["--cell-timeout", str(cell_timeout)] if cell_timeout else [])
    options += ["--die-with-parent", str(os.getpid())]  # a grader killed outright leaves no worker grading
    limit = notebook_limit(root)
    # One notebook per task, any worker, student by student and each student's lessons in order:
    # the workers grade different lessons at any moment (one lesson's timers hold their calls, wall
    # time without CPU, while another's cells compile), and the last notebooks of the class go
    # to whichever workers are free.
    pending, results = [], list(refused)
    submissions = [(student, lesson) for student, student_lessons in gradable.items()
                   for lesson in lessons if lesson in student_lessons]
    current = set() if force else up_to_date_among(root, submissions)
    for student, lesson in submissions:
        if (student, lesson) in current:
            results.append(Outcome(student, lesson, up_to_date=True))
        else:
            pending.append((student, lesson))
    progress = Progress(len(pending))
    if cluster is not None:
        from . import cluster as dask_cluster

        by_student: dict[str, list[str]] = {}
        for student, lesson in pending:
            by_student.setdefault(student, []).append(lesson)
        if by_student:
            results.extend(dask_cluster.grade(root, by_student, cluster, sandbox, cell_timeout, progress).outcomes)
        _read_back(root, lessons, results)
        return sorted(results, key=lambda o: (o.student, o.lesson))
    size = demand.PoolSize(workers, student_memory(root))
    if pending and nbgrader.creates_students(root):
        # Two notebooks of one student may be graded at once, on two workers: each student is
        # in the gradebook before either, so neither autograde adds them (the second would fail).
        nbgrader.add_students(root, sorted({student for student, _ in pending}))
    lock, changed = threading.Lock(), threading.Condition()
    threads: list[threading.Thread] = []
    slots: list[WorkerSlot] = []
    interrupted = threading.Event()

    def take():
        """The next pending notebook (None: none left, or interrupted)."""
        with changed:
            return pending.pop(0) if pending and not interrupted.is_set() else None

    def again(task):
        """A notebook queued on a worker that died before it began: given out again, first."""
        with changed:
            pending.insert(0, task)

    def serve():
        slot = WorkerSlot(root, options)
        with lock:
            slots.append(slot)
            if interrupted.is_set():
                slot.interrupted = True
        task, sent = take(), False
        try:
            while task is not None:
                student, lesson = task
                queued = None  # sent to the worker after `task`: it starts that notebook's kernel ahead
                try:
                    if not sent:
                        slot.send(student, [lesson])
                    # Near the class's end, no notebook is queued behind another: each of the
                    # last ones goes to whichever worker is free first.
                    queued = take() if len(pending) > running() else None
                    if queued is not None:
                        slot.send(queued[0], [queued[1]])
                    outcomes = slot.collect(student, [lesson], limit, progress)
                except Exception as exc:  # a worker that cannot start: this student is reported, not lost
                    if not slot.interrupted:  # interrupted, it is stopping its kernels: slot.close() waits
                        slot.kill()
                    outcomes = [Outcome(student, lesson, error=f"not graded: {exc}")]
                    progress.advance(f"{student}/{lesson}")
                with lock:
                    results.extend(outcomes)
                if queued is not None and slot.running:
                    task, sent = queued, True
                else:
                    if queued is not None:  # lost with a worker that died before it began
                        again(queued)
                    task, sent = take(), False
        finally:
            slot.close()
            with lock:
                ended.append(threading.current_thread())
            an_end.set()

    # The main thread waits for the serve threads on `an_end`, never with Thread.join(): on Python
    # 3.11 a join interrupted by Ctrl-C or SIGTERM marks the thread it waits for as stopped while it
    # runs on (the handling of bpo-45274 in threading.py), so the interrupted pool stopped waiting
    # for it and exited, and its worker, started by that thread, was killed with it (the worker's
    # PR_SET_PDEATHSIG) in the middle of a notebook, its kernels' folders left behind.
    ended: list[threading.Thread] = []  # serve threads done, each after closing its worker
    an_end = threading.Event()          # set as each ends

    def running() -> int:
        with lock:
            return len(threads) - len(ended)

    notebooks_pending = len(pending)

    def start_worker():
        thread = threading.Thread(target=serve)
        thread.start()
        threads.append(thread)

    for _ in range(min(size.initial, notebooks_pending)):
        start_worker()
    # The pool grows while the cores idle and a task waits for a worker (grading/demand.py).
    try:
        while alive := running():
            an_end.wait(demand.WINDOW)
            an_end.clear()
            with changed:
                waiting = bool(pending)
            if size.grow(alive, waiting) and len(threads) < notebooks_pending:
                start_worker()
                progress.note(f"the cores were idle while notebooks waited: {len(threads)} workers now")
    except BaseException:
        # Interrupted (Ctrl-C, or SIGTERM: cli.py): no notebook is given out again, and every
        # worker stops now, cleaning up after itself, before the interruption goes on; otherwise
        # the pool's threads would go on grading the whole class after the command said it stopped.
        with changed:
            interrupted.set()
            changed.notify_all()
        deadline = time.monotonic() + INTERRUPT_GRACE
        while running():
            with lock:
                stopping = list(slots)
            for slot in stopping:
                if time.monotonic() < deadline:
                    slot.interrupt()
                else:
                    slot.kill()
            an_end.wait(0.2)
            an_end.clear()
        raise
    _read_back(root, lessons, results)
    return sorted(results, key=lambda o: (o.student, o.lesson))


def _read_back(root: Path, lessons: list[str], results: list[Outcome]) -> None:
    """Each graded outcome's scores, from nbgrader's gradebook and its CSV export (penalties included)."""
    graded = [o for o in results if o.error is None]
    rows = nbgrader.export(root, lessons, sorted({o.student for o in graded})) if graded else {}
    scores = nbgrader.notebook_scores(root, [(o.student, o.lesson) for o in graded]) if graded else {}
    releases: dict = {}
    for outcome in graded:
        outcome.score = scores[(outcome.student, outcome.lesson)]
        outcome.export = rows.get((outcome.student, outcome.lesson))
        nb = _autograded(root, outcome.student, outcome.lesson)  # read once for notes and flags
        outcome.notes = notes_of(nb) + lost_cells(root, outcome.lesson, nb, releases) if nb is not None else []
        outcome.flags = flags_of(nb) if nb is not None else []
        if outcome.score is None or outcome.export is None:
            outcome.error = "nbgrader recorded no score"


def _require_assignments(root: Path, lessons: list[str]) -> None:
    missing = nbgrader.missing_assignments(root, lessons)
    if missing:
        raise CourseError(f"{', '.join(missing)} not in the gradebook ({nbgrader.db_url(root)}): "
                          "run 'make release' (perfcourse release) first")


def _autograded(root: Path, student: str, lesson: str):
    try:
        return nbformat.read(nbgrader.folder(root, "autograded", student, lesson) / f"{lesson}.ipynb",
                             as_version=4)
    except Exception:
        return None


def notes_of(nb) -> list[str]:
    """The grader-made failures (GRADER_ERRORS) in a graded notebook's outputs, each once, then
    what went wrong in its teardown (the notebook was scored all the same)."""
    from .execute import GRADER_ERRORS, TIMING_KEY

    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and out.get("ename") in GRADER_ERRORS:
                text = f"{out['ename']}: {out.get('evalue') or 'cell timed out'}"
                if text not in found:
                    found.append(text)
    record = nb.metadata.get(TIMING_KEY, {})
    cut = [line for line in record.get("output_cut") or [] if isinstance(line, str)]
    teardown = [f"teardown: {line}" for line in record.get("teardown") or [] if isinstance(line, str)]
    return found + cut + teardown


def lost_cells(root: Path, lesson: str, nb, releases: dict | None = None) -> list[str]:
    """What the graded notebook lost against the lesson's release (grading/losses.py); `releases`
    keeps each release notebook read once across a class."""
    from ..release import released

    releases = {} if releases is None else releases
    if lesson not in releases:
        try:
            releases[lesson] = read_notebook(released(root, lesson))
        except CourseError:
            releases[lesson] = None  # no release to compare with: nothing can be said
    return losses.lost_cells(nb, releases[lesson]) if releases[lesson] is not None else []


def flags(root: Path, student: str, lesson: str) -> list[str]:
    """The evidence flags the grader stored in the autograded notebook, for a human to review.

    nb.metadata[EVIDENCE_KEY] is a list of short lines (see perfcourse.kernel.evidence): things
    the student's code did that deserve a look. They are evidence, not a verdict: no score changes.
    """
    nb = _autograded(root, student, lesson)
    return flags_of(nb) if nb is not None else []


def flags_of(nb) -> list[str]:
    """The evidence flags stored in a notebook, as printable one-line texts (at most 20)."""
    stored = nb.get("metadata", {}).get(EVIDENCE_KEY, [])
    if not isinstance(stored, list):
        return ["malformed evidence record (not a list)"]
    found = []
    for item in stored[:20]:
        text = scratch.shown(str(item))
        if text not in found:
            found.append(text)
    return found
