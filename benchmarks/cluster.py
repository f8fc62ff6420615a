"""Benchmark: the local worker pool against a Dask cluster, and how the cost grows with the class.

    .venv/bin/python benchmarks/cluster.py [--students 10 20 40] [--workers 2] [--lesson L ...]
                                           [--cluster tcp://HOST:PORT]

For each class size, builds a class (each student hands in one of the lesson's samples, in turn),
copies it into two scratch courses, and times `perfcourse grade --workers N` (the local pool) and
`perfcourse grade --cluster ADDRESS` (one Dask task per student) on them. Without --cluster it starts
a cluster of N single-threaded worker processes on 127.0.0.1 (distributed.LocalCluster) for the
run, so both sides have the same number of graders on the same cores. It prints notebooks per
second side by side, seconds per notebook as the class grows, how many workers took part, and
checks that both runs gave every notebook the same score. On one machine the cluster pays for
what a cluster needs (a task per student, a scratch course and gradebook per task, the grader
recording every result itself) with no extra cores to spend it on: the numbers show that
overhead; on several machines its workers add cores the local pool does not have.
"""
from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfcourse import release, samples
from perfcourse.course import copy_course, find_root, lessons
from perfcourse.nbgrader_bridge import nbgrader_env, notebook_score

ROOT = find_root(Path(__file__).resolve().parent)


def build_class(root: Path, students: int, lesson_ids: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for lesson in lesson_ids:
        options = samples.discover(root, [lesson])
        for i in range(students):
            sample = options[i % len(options)]
            sample.case = f"{i:03d}"  # the student id becomes sample-000, sample-001, ...
            samples.write_submissions(root, [sample])
            pairs.append((sample.student, lesson))
    return pairs


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=nbgrader_env(), capture_output=True, text=True)
    return time.perf_counter() - started, done.stdout + done.stderr


@contextlib.contextmanager
def scheduler(address: str | None, workers: int):
    if address:
        yield address
        return
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lesson", action="append", help="only this lesson (repeatable; default: every lesson)")
    parser.add_argument("--cluster", help="an already running Dask scheduler (default: start a local one)")
    args = parser.parse_args()
    lesson_ids = args.lesson or lessons(ROOT)
    only = [arg for lesson in lesson_ids for arg in ("--lesson", lesson)]
    rows, differ = [], []
    with scheduler(args.cluster, args.workers) as address, \
            tempfile.TemporaryDirectory(prefix="perfcourse-bench-") as scratch:
        print(f"lessons: {', '.join(lesson_ids)}; local pool: {args.workers} workers; cluster: {address}", flush=True)
        for size in args.students:
            local_root = copy_course(ROOT, Path(scratch) / f"local-{size}")
            release.generate(local_root, lesson_ids)
            pairs = build_class(local_root, size, lesson_ids)
            cluster_root = Path(scratch) / f"cluster-{size}"
            shutil.copytree(local_root, cluster_root)
            grade = [sys.executable, "-m", "perfcourse.cli", "grade", *only]
            local, _ = timed(grade + ["--workers", str(args.workers)], local_root)
            remote, said = timed(grade + ["--cluster", address], cluster_root)
            took = re.search(r"\((\d+) workers? took part\)", said)
            rows.append((size, len(pairs), local, remote, took.group(1) if took else "?"))
            print(f"{size:>4} students {len(pairs):>4} notebooks  local {local:7.1f} s {len(pairs) / local:6.3f} nb/s"
                  f"  cluster {remote:7.1f} s {len(pairs) / remote:6.3f} nb/s  ({rows[-1][4]} workers took part)",
                  flush=True)
            differ += [(size, s, l) for s, l in pairs
                       if getattr(notebook_score(local_root, l, s), "cells", None)
                       != getattr(notebook_score(cluster_root, l, s), "cells", None)]
    print("\nstudents  notebooks  local nb/s  cluster nb/s  local s/nb  cluster s/nb  workers")
    for size, count, local, remote, took in rows:
        print(f"{size:>8}  {count:>9}  {count / local:>10.3f}  {count / remote:>12.3f}  {local / count:>10.2f}"
              f"  {remote / count:>12.2f}  {took:>7}")
    if len(rows) > 1:
        (s0, n0, l0, r0, _), (s1, n1, l1, r1, _) = rows[0], rows[-1]
        print(f"from {s0} to {s1} students ({n1 / n0:.1f}x the notebooks): local time {l1 / l0:.2f}x, "
              f"cluster time {r1 / r0:.2f}x (linear growth: {n1 / n0:.1f}x)")
    print("scores: identical in both runs" if not differ else f"scores DIFFER for {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
