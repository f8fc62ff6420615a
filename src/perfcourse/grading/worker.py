"""One grading worker: autograde students' lessons with nbgrader, in this process.

    python -m perfcourse.grading.worker [--sandbox bwrap|none] [--cell-timeout S]

Started from the course root by `grading.run`, which keeps one worker per core busy. It reads
tasks from stdin, one JSON line each: {"student": ID, "lessons": [...]}; a student is only ever
given to one worker at a time (nbgrader breaks when one student is graded twice at once). For
each lesson it prints {"student", "lesson", "seconds", "error"}, then {"done": ID} for the task.
The scores themselves go to the gradebook. Importing nbgrader once per worker, not once per
notebook, is most of what makes this faster than `nbgrader autograde` run per notebook.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..gradebook import course_config


def grade(root: Path, student: str, lessons: list[str], sandbox: str, cell_timeout: int | None):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = course_config(root)
    config.GuardedExecute.sandbox = sandbox
    if cell_timeout:
        config.Execute.timeout = cell_timeout
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    for lesson in lessons:
        started = time.perf_counter()
        try:
            result = api.autograde(lesson, student, force=True, create=True)
            error = None if result.get("success") else _reason(result)
        except Exception as exc:  # never let one lesson cost the student's other lessons
            error = f"{type(exc).__name__}: {exc}"
        yield {"student": student, "lesson": lesson,
               "seconds": round(time.perf_counter() - started, 3), "error": error}


def _reason(result: dict) -> str:
    text = (result.get("error") or "") + "\n" + (result.get("log") or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(("RuntimeError", "ValueError", "KeyError", "nbformat", "json", "OSError")) \
                or "Error:" in line:
            return line[:300]
    return (lines[-1] if lines else "nbgrader reported a failure")[:300]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfcourse.grading.worker")
    parser.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap")
    parser.add_argument("--cell-timeout", type=int)
    args = parser.parse_args(argv)
    # nbgrader logs to stderr; stdout carries only this protocol's JSON lines.
    protocol, sys.stdout = sys.stdout, sys.stderr
    print(json.dumps({"ready": True}), file=protocol, flush=True)
    for line in sys.stdin:
        task = json.loads(line)
        for outcome in grade(Path.cwd(), task["student"], task["lessons"], args.sandbox, args.cell_timeout):
            print(json.dumps(outcome), file=protocol, flush=True)
        print(json.dumps({"done": task["student"]}), file=protocol, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
