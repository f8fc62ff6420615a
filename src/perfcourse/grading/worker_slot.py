"""A grading worker process as the pool (run.py) and a Dask worker (cluster.py) drive it.

`WorkerSlot` starts `python -m perfcourse.grading.worker`, sends it tasks and reads back each
notebook's `Outcome`; `Progress` shows the run; `notebook_limit` is how long a worker may take
over one notebook. Both drivers import this module, and neither imports the other for it.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import nbgrader_bridge as nbgrader
from ..course import CourseError

WORKER = [sys.executable, "-m", "perfcourse.grading.worker"]
INTERRUPT_GRACE = 15  # seconds an interrupted worker has to stop its kernels and clean up before it is killed
KILLED_WAIT = 5       # seconds a worker killed with SIGKILL is waited for before its folder is removed
SCRATCH_PREFIX = "pcw-"  # each worker's temporary folder: short, since sockets lie below it


@dataclass
class Outcome:
    student: str
    lesson: str
    seconds: float = 0.0
    error: str | None = None
    score: nbgrader.NotebookScore | None = None  # the autograded notebook's cells
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # evidence for review, not a verdict
    export: dict | None = None  # nbgrader export's row: raw_score, late_submission_penalty, score, ...
    up_to_date: bool = False  # graded before, submission unchanged since: not graded again
    worker: str | None = None  # the Dask worker that graded it (perfcourse grade --cluster)


class Progress:
    """tqdm's bar on a terminal; elsewhere (CI, logs) one line per graded notebook, in tqdm's words."""

    def __init__(self, total: int, stream=sys.stderr):
        from tqdm import tqdm

        self.total, self.done, self.stream = total, 0, stream
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.format = tqdm.format_meter
        self.bar = tqdm(total=total, unit="notebook", file=stream) if stream.isatty() and total else None

    def note(self, line: str) -> None:
        """A line about the run itself, between the progress lines (or above the bar)."""
        with self.lock:
            if self.bar is not None:
                self.bar.write(line, file=self.stream)
            else:
                print(line, file=self.stream, flush=True)

    def advance(self, label: str) -> None:
        with self.lock:
            self.done += 1
            if self.bar is not None:
                self.bar.set_postfix_str(label[:40], refresh=False)
                self.bar.update()
                if self.done >= self.total:
                    self.bar.close()
                return
            meter = self.format(self.done, self.total, time.monotonic() - self.started, unit="notebook")
            print(f"{meter} {label}", file=self.stream, flush=True)


class WorkerSlot:
    """One worker process; restarted after a crash or a time-out."""

    def __init__(self, root: Path, options: list[str]):
        self.root, self.options, self.process = root, options, None
        self.interrupted, self._terminated = False, None
        self.scratch: Path | None = None  # the worker's temporary folder (its TMPDIR)

    def start(self):
        # What the worker makes in its temporary folder (its kernels' and notebooks' folders, its
        # fork servers') lies in one of its own, removed once it has ended, however it ended: a
        # worker killed or dead in the middle of a notebook leaves nothing behind either.
        self._remove_scratch()
        self.scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
        self.scratch.chmod(0o755)  # as the temporary folder itself: the kernels' user reaches below it
        self.process = subprocess.Popen(
            WORKER + self.options, cwd=self.root, text=True, bufsize=1,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, "TMPDIR": str(self.scratch)},
        )
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.lines), daemon=True).start()
        if self._next(120) != {"ready": True}:
            raise CourseError("a grading worker did not start")

    @staticmethod
    def _read(process, lines):
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    def _next(self, timeout: float):
        try:
            line = self.lines.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            return "timeout"
        return json.loads(line) if line is not None else None

    def kill(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, 9)
            try:
                self.process.wait(KILLED_WAIT)
            except subprocess.TimeoutExpired:
                pass
        self.process = None
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        if self.scratch is not None and (self.process is None or self.process.poll() is not None):
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def interrupt(self) -> None:
        """The grading was interrupted: the worker stops at once, stopping its kernels and removing
        its folders on the way out (SIGTERM: grading/worker.py), and none is started after it."""
        self.interrupted = True
        process = self.process
        if process is not None and process.poll() is None and process is not self._terminated:
            self._terminated = process
            try:
                process.terminate()
            except OSError:
                pass

    def close(self, grace: float = 10):
        """No more tasks: the worker ends on its own, stopping the trusted kernel it kept and removing
        its folders (grading/trusted_kernel.py); killed only if it has not within `grace` seconds."""
        if self.process and self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(grace)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def send(self, student: str, lessons: list[str]) -> None:
        """Queue a task on the worker (starting it if need be); it is graded after those before it."""
        if self.interrupted:
            raise CourseError("grading was interrupted")
        if self.process is None or self.process.poll() is not None:
            self.start()
        self.process.stdin.write(json.dumps({"student": student, "lessons": lessons}) + "\n")
        self.process.stdin.flush()

    def collect(self, student: str, lessons: list[str], limit: float, progress: Progress) -> list[Outcome]:
        """The outcomes of the task sent for `student`, the first one still queued; each lesson
        within `limit` seconds of the last. A worker that crashes or runs past the limit is killed:
        the lessons not reported are not graded, with the reason, and the tasks queued after this
        one are lost with it (the caller gives them out again)."""
        outcomes, deadline = {}, time.monotonic() + limit
        while True:
            message = self._next(deadline - time.monotonic())
            if isinstance(message, dict) and message.get("done") == student:
                break
            if isinstance(message, dict) and "lesson" in message:
                outcomes[message["lesson"]] = Outcome(student, message["lesson"], message["seconds"],
                                                      message["error"])
                progress.advance(f"{student}/{message['lesson']}")
                deadline = time.monotonic() + limit
                continue
            why = ("grading was interrupted" if self.interrupted
                   else "its worker ran past the time limit of the student's notebooks"
                   if message == "timeout" else "its grading worker crashed")
            self.kill()
            for lesson in lessons:
                if lesson not in outcomes:
                    outcomes[lesson] = Outcome(student, lesson, error=f"not graded: {why}")
                    progress.advance(f"{student}/{lesson}")
            break
        return [outcomes[lesson] for lesson in lessons]

    def grade(self, student: str, lessons: list[str], limit: float, progress: Progress) -> list[Outcome]:
        self.send(student, lessons)
        return self.collect(student, lessons, limit, progress)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def student_memory(root: Path) -> int:
    """The memory bound of one student's kernel (GuardedExecute.memory_bytes in grader_config.py)."""
    from .execute import GuardedExecute

    return GuardedExecute(config=nbgrader.config(root)).memory_bytes


def notebook_limit(root: Path) -> float:
    """How long a worker may take over one notebook before it is killed: GuardedExecute's own limit
    (notebook_timeout, in grader_config.py) plus its interrupt grace for both kernels and the time
    to start and stop them, so the notebook's own limit always ends it first."""
    from .execute import GuardedExecute

    guard = GuardedExecute(config=nbgrader.config(root))
    try:
        guard._require_limits()
    except RuntimeError as exc:
        raise CourseError(f"{root / 'grader_config.py'}: {exc}") from None
    try:
        guard.check_socket_room(worker_tempdir())  # each worker's TMPDIR is a folder of its own in this one
    except RuntimeError as exc:
        raise CourseError(str(exc)) from None
    return guard.notebook_timeout + 2 * guard.interrupt_grace + STARTUP_SECONDS


def worker_tempdir() -> str:
    """The longest TMPDIR a grading worker can have: WorkerSlot's folder in this process's."""
    return os.path.join(tempfile.gettempdir(), SCRATCH_PREFIX + "x" * 8)


STARTUP_SECONDS = 120  # a worker's nbgrader, two sandboxed kernels, the gradebook writes
