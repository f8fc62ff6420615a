"""One grading worker: autograde students' lessons with nbgrader, in this process.

    python -m perfcourse.grading.worker [--sandbox bwrap|none] [--cell-timeout S]
                                        [--generate LESSON ...] [--die-with-parent PID]

Started from the course root by `grading.run`, which keeps one worker per core busy. It reads
tasks from stdin, one JSON line each: {"student": ID, "lessons": [...]}; a student is only ever
given to one worker at a time (nbgrader breaks when one student is graded twice at once). For
each lesson it prints {"student", "lesson", "seconds", "error"}, then {"done": ID} for the task.
The scores themselves go to the gradebook. Importing nbgrader once per worker, not once per
notebook, is most of what makes this faster than `nbgrader autograde` run per notebook; the
worker's trusted kernel, too, grades one notebook after another (grading/trusted_kernel.py).

On a Dask worker (`perfcourse grade --cluster`, grading/cluster.py) it runs in a private scratch
course: `--generate` first records those lessons in that course's own gradebook (nbgrader
generate_assignment), and `--die-with-parent` ends it, and so its sandboxed kernels, when the Dask
worker that started it dies.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import startup  # noqa: F401,I001 (before anything that imports nbformat, and so jsonschema)
from .. import nbgrader_bridge as nbgrader
from . import trusted_kernel


def grade(root: Path, student: str, lessons: list[str], sandbox: str, cell_timeout: int | None):
    config = nbgrader.config(root)
    config.GuardedExecute.sandbox = sandbox
    if cell_timeout:
        config.Execute.timeout = cell_timeout
    for lesson in lessons:
        started = time.perf_counter()
        try:
            error = nbgrader.autograde(root, lesson, student, config)
        except Exception as exc:  # never let one lesson cost the student's other lessons
            error = f"{type(exc).__name__}: {exc}"
        yield {"student": student, "lesson": lesson,
               "seconds": round(time.perf_counter() - started, 3), "error": error}


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
    # nbgrader logs to stderr; stdout carries only this protocol's JSON lines.
    protocol, sys.stdout = sys.stdout, sys.stderr
    for lesson in args.generate:
        nbgrader.generate_assignment(Path.cwd(), lesson)
    print(json.dumps({"ready": True}), file=protocol, flush=True)
    with trusted_kernel.kept():  # one trusted kernel for this worker's notebooks, in turn
        for line in sys.stdin:
            task = json.loads(line)
            for outcome in grade(Path.cwd(), task["student"], task["lessons"], args.sandbox, args.cell_timeout):
                print(json.dumps(outcome), file=protocol, flush=True)
            print(json.dumps({"done": task["student"]}), file=protocol, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
