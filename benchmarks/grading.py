"""Benchmark: `perfcourse grade` against plain serial `nbgrader autograde`, on one generated class.

    .venv/bin/python benchmarks/grading.py [--students 20] [--workers N]

Builds a class of N students (each hands in one of the samples of every lesson, in turn), copies
it into two scratch courses, and in one run measures:
  - the floor: starting a jax-cpu kernel and importing jax in it (median of 5);
  - plain nbgrader: `nbgrader autograde LESSON` per lesson, serially, as an instructor runs it;
  - `perfcourse grade`: parallel workers, sandboxed, grade cells in a trusted kernel;
  - the trusted side's cost: seconds each notebook spent in its grade cells.
Both runs use the course's grader_config.py, so each notebook gets the same kernel, sandbox and
trusted kernel; what differs is how the class is scheduled. It prints the times, their ratio, and the
cost per notebook beside the floor, then checks that both runs gave every notebook the same score.
These are one machine's seconds; the ratio is what carries over.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfcourse import kernels, release, samples
from perfcourse.course import copy_course, find_root, lessons
from perfcourse.nbgrader_bridge import folder, nbgrader_env, notebook_score

ROOT = find_root(Path(__file__).resolve().parent)


def build_class(root: Path, students: int) -> list[tuple[str, str]]:
    by_lesson = {lesson: samples.discover(root, [lesson]) for lesson in lessons(root)}
    pairs = []
    for i in range(students):
        for lesson, options in by_lesson.items():
            if not options:
                continue
            sample = options[i % len(options)]
            sample.case = f"{i:03d}"  # the student id becomes sample-000, sample-001, ...
            samples.write_submissions(root, [sample])
            pairs.append((sample.student, lesson))
    return pairs


def kernel_floor(repeats: int = 5) -> float:
    from jupyter_client.manager import start_new_kernel

    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        km, kc = start_new_kernel(kernel_name=kernels.DEFAULT, stderr=subprocess.DEVNULL)
        kc.execute_interactive("import jax, jax.numpy as jnp; jnp.zeros(1).block_until_ready()", timeout=60,
                               output_hook=lambda msg: None)
        times.append(time.perf_counter() - started)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return statistics.median(times)


def trusted_side(root: Path, pairs) -> dict[str, list[tuple[float, bool]]]:
    """Per lesson, each graded notebook's seconds in its grade cells and whether its trusted kernel
    parsed a program the student's kernel exported (then it was stopped after that notebook)."""
    import nbformat

    from perfcourse.grading.execute import TIMING_KEY

    found: dict[str, list[tuple[float, bool]]] = {}
    for student, lesson in pairs:
        path = folder(root, "autograded", student, lesson) / f"{lesson}.ipynb"
        if path.is_file():
            timing = nbformat.read(path, as_version=4).metadata.get(TIMING_KEY) or {}
            if "grade_cell_seconds" in timing:
                found.setdefault(lesson, []).append((float(timing["grade_cell_seconds"]),
                                                     bool(timing.get("trusted_kernel_tainted"))))
    return found


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=nbgrader_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--workers", type=int)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="perfcourse-bench-") as scratch:
        serial_root = copy_course(ROOT, Path(scratch) / "serial")
        release.generate(serial_root)
        pairs = build_class(serial_root, args.students)
        parallel_root = Path(scratch) / "parallel"
        shutil.copytree(serial_root, parallel_root)
        print(f"class: {args.students} students, {len(pairs)} notebooks, {len(lessons(serial_root))} lessons",
              flush=True)

        floor = kernel_floor()
        print(f"floor (start a jax-cpu kernel, import jax): {floor:.2f} s median of 5", flush=True)

        serial = sum(timed([sys.executable, "-m", "nbgrader", "autograde", lesson, "--force"], serial_root)
                     for lesson in lessons(serial_root))
        print(f"plain nbgrader autograde, serial:  {serial:7.1f} s  {serial / len(pairs):5.2f} s per notebook",
              flush=True)

        command = [sys.executable, "-m", "perfcourse.cli", "grade"]
        command += ["--workers", str(args.workers)] if args.workers else []
        parallel = timed(command, parallel_root)
        print(f"perfcourse grade, parallel:        {parallel:7.1f} s  {parallel / len(pairs):5.2f} s per notebook")
        print(f"speed-up: {serial / parallel:.2f}x; per-notebook cost {parallel / len(pairs) / floor:.2f}x the floor "
              f"(serial: {serial / len(pairs) / floor:.2f}x)")
        by_lesson = trusted_side(parallel_root, pairs)
        trusted = [seconds for found in by_lesson.values() for seconds, _ in found]
        if trusted:
            print(f"trusted side (grade cells in the trusted kernel, channel included): median "
                  f"{statistics.median(trusted):.2f} s per notebook ({sum(trusted):.0f} s over {len(trusted)} "
                  "notebooks); its kernel starts beside the student's, at no wall-clock cost of its own")
            # What each lesson's instruments cost: timers hold calls (wall time, no CPU), verified
            # programs are parsed in a trusted kernel that is then replaced for the next notebook.
            for lesson, found in sorted(by_lesson.items()):
                parsed = sum(tainted for _, tainted in found)
                print(f"  {lesson:<18} grade cells median {statistics.median(s for s, _ in found):5.2f} s; "
                      f"{parsed} of {len(found)} notebooks parsed a student's program (a fresh trusted kernel after)")

        differ = [(s, l) for s, l in pairs
                  if getattr(notebook_score(serial_root, l, s), "cells", None)
                  != getattr(notebook_score(parallel_root, l, s), "cells", None)]
        print("scores: identical in both runs" if not differ else f"scores DIFFER for {differ}")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
