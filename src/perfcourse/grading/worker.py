"""One grading worker: autograde students' lessons with nbgrader, in this process.

    python -m perfcourse.grading.worker [--sandbox bwrap|none] [--cell-timeout S]
                                        [--generate LESSON ...] [--die-with-parent PID]

Started from the course root by `grading.run`, which keeps its workers busy. It reads tasks from
stdin, one JSON line each: {"student": ID, "lessons": [...]}, in order; the pool sends a worker
its next task while the current one runs, so the worker starts the next notebook's student kernel
ahead (grading/ready_kernel.py). Another worker may grade another of the same student's notebooks
meanwhile (the pool adds every student to the gradebook first). For each lesson it prints {"student", "lesson",
"seconds", "error"}, then {"done": ID} for the task. The scores themselves go to the gradebook.
Importing nbgrader once per worker, not once per notebook, is most of what makes this faster than
`nbgrader autograde` run per notebook; the worker's trusted kernel, too, grades one notebook
after another (grading/trusted_kernel.py).

On a Dask worker (`perfcourse grade --cluster`, grading/cluster.py) it runs in a private scratch
course: `--generate` first records those lessons in that course's own gradebook (nbgrader
generate_assignment), and `--die-with-parent` ends it, and so its sandboxed kernels, when the Dask
worker that started it dies.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

from .. import startup  # noqa: F401,I001 (before anything that imports nbformat, and so jsonschema)
from .. import nbgrader_bridge as nbgrader
from . import fork_server, interruption, ready_kernel, trusted_kernel


def grade(root: Path, task: dict, sandbox: str, cell_timeout: int | None, tasks: Tasks | None = None):
    config = nbgrader.config(root)
    config.GuardedExecute.sandbox = sandbox
    if cell_timeout:
        config.Execute.timeout = cell_timeout
    student = task["student"]
    for index, lesson in enumerate(task["lessons"]):
        if interruption.requested():
            return
        if tasks is not None:
            ready_kernel.next_up = lambda index=index: upcoming(root, task, index, tasks)
        started = time.perf_counter()
        try:
            error = nbgrader.autograde(root, lesson, student, config)
        except Exception as exc:  # never let one lesson cost the student's other lessons
            error = f"{type(exc).__name__}: {exc}"
        yield {"student": student, "lesson": lesson,
               "seconds": round(time.perf_counter() - started, 3), "error": error}


class Tasks:
    """The tasks on stdin, read as they come (a thread), so the worker sees its next notebook while
    it grades the current one: the pool sends a worker its next task ahead (grading/run.py)."""

    def __init__(self, stream):
        self._lines: list[dict | None] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            with self._changed:
                self._lines.append(json.loads(line))
                self._changed.notify_all()
        with self._changed:
            self._lines.append(None)
            self._changed.notify_all()

    def get(self) -> dict | None:
        """The next task, waiting for it; None once stdin is closed."""
        with self._changed:
            self._changed.wait_for(lambda: self._lines)
            return self._lines[0] if self._lines[0] is None else self._lines.pop(0)

    def peek(self) -> dict | None:
        """The task after the current one, if it has arrived."""
        with self._changed:
            return self._lines[0] if self._lines else None


def upcoming(root: Path, task: dict, index: int, tasks: Tasks) -> tuple[Path, Path] | None:
    """The submission folder and source notebook of the notebook after task["lessons"][index]."""
    if index + 1 < len(task["lessons"]):
        student, lesson = task["student"], task["lessons"][index + 1]
    elif (following := tasks.peek()) is not None and following["lessons"]:
        student, lesson = following["student"], following["lessons"][0]
    else:
        return None
    return (nbgrader.folder(root, "submitted", student, lesson),
            nbgrader.folder(root, "source", ".", lesson) / f"{lesson}.ipynb")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfcourse.grading.worker")
    parser.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap")
    parser.add_argument("--cell-timeout", type=int)
    parser.add_argument("--generate", action="append", default=[], metavar="LESSON",
                        help="first record this lesson in the gradebook (a scratch course's)")
    parser.add_argument("--die-with-parent", type=int, metavar="PID",
                        help="end with the process PID, which started this one")
    args = parser.parse_args(argv)
    if args.die_with_parent:
        from .sandbox import die_with_parent

        die_with_parent(args.die_with_parent)
    # Interrupted (the pool stops its workers so): the notebook under way ends at once, its kernels
    # killed, and the worker after it, through every `finally`, so the kernels are stopped and the
    # folders removed (GuardedExecute's teardown, trusted_kernel.kept(); grading/interruption.py).
    interruption.install()
    # nbgrader logs to stderr; stdout carries only this protocol's JSON lines.
    protocol, sys.stdout = sys.stdout, sys.stderr
    root = Path.cwd()
    for lesson in args.generate:
        nbgrader.generate_assignment(root, lesson)
    tasks = Tasks(sys.stdin)
    print(json.dumps({"ready": True}), file=protocol, flush=True)
    # One trusted kernel for this worker's notebooks, in turn; each notebook's student kernel
    # started while the one before it runs (grading/ready_kernel.py).
    # The fork server outlives the kernels forked from it: it reaps their watchers as they are stopped.
    with fork_server.kept(), trusted_kernel.kept():
        try:
            while not interruption.requested() and (task := tasks.get()) is not None:
                for outcome in grade(root, task, args.sandbox, args.cell_timeout, tasks):
                    print(json.dumps(outcome), file=protocol, flush=True)
                print(json.dumps({"done": task["student"]}), file=protocol, flush=True)
        finally:
            ready_kernel.next_up = None
            ready_kernel.discard()
    return 128 + signal.SIGTERM if interruption.requested() else 0


if __name__ == "__main__":
    sys.exit(main())
