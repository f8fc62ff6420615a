"""Benchmark: the local worker pool against a Dask cluster, as the workers and the class grow.

    .venv/bin/python benchmarks/cluster.py [--students 10 20] [--workers 1 2] [--lesson L ...]
                                           [--cluster tcp://HOST:PORT]

For each class size, builds a class (each student hands in one of the lesson's samples, in turn)
and, for each worker count, times `perfcourse grade --workers N` (the local pool, fixed at N) and
`perfcourse grade --cluster ADDRESS` (one Dask task per student) on copies of it. Without --cluster
it starts a cluster of N single-threaded worker processes on 127.0.0.1 (distributed.LocalCluster)
for each count, so both sides have the same number of graders on the same cores. It prints
notebooks per second side by side and as the workers grow, and checks that both runs gave every
notebook the same score. A Dask worker keeps its scratch course and grading workers between
tasks (grading/cluster.py), so the cluster's cost per task is the data it carries and the
grader recording every result itself; on one machine there are no extra cores to spend it on,
on several machines its workers add cores the local pool does not have.
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
from perfcourse.nbgrader_bridge import nbgrader_env, notebook_scores

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
    parser.add_argument("--students", type=int, nargs="+", default=[10, 20])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="worker counts to compare (the local pool fixed at each; a local cluster of each)")
    parser.add_argument("--lesson", action="append", help="only this lesson (repeatable; default: every lesson)")
    parser.add_argument("--cluster", help="an already running Dask scheduler (default: start a local one per "
                                          "worker count)")
    args = parser.parse_args()
    lesson_ids = args.lesson or lessons(ROOT)
    only = [arg for lesson in lesson_ids for arg in ("--lesson", lesson)]
    counts = args.workers if not args.cluster else [args.workers[-1]]
    rows, differ = [], []
    with tempfile.TemporaryDirectory(prefix="perfcourse-bench-") as scratch:
        print(f"lessons: {', '.join(lesson_ids)}; workers: {', '.join(map(str, counts))}"
              + (f"; cluster: {args.cluster}" if args.cluster else "; a local Dask cluster per count"), flush=True)
        for size in args.students:
            template = copy_course(ROOT, Path(scratch) / f"class-{size}")
            release.generate(template, lesson_ids)
            pairs = build_class(template, size, lesson_ids)
            for workers in counts:
                local_root, cluster_root = (Path(scratch) / f"{kind}-{size}-{workers}" for kind in ("local", "cluster"))
                shutil.copytree(template, local_root)
                shutil.copytree(template, cluster_root)
                grade = [sys.executable, "-m", "perfcourse.cli", "grade", *only]
                local, _ = timed(grade + ["--workers", str(workers)], local_root)
                with scheduler(args.cluster, workers) as address:
                    remote, said = timed(grade + ["--cluster", address], cluster_root)
                took = re.search(r"\((\d+) workers? took part\)", said)
                rows.append((size, workers, len(pairs), local, remote, took.group(1) if took else "?"))
                print(f"{size:>4} students {len(pairs):>4} notebooks, {workers} workers: local {local:7.1f} s "
                      f"{len(pairs) / local:6.3f} nb/s, cluster {remote:7.1f} s {len(pairs) / remote:6.3f} nb/s "
                      f"({rows[-1][5]} took part)", flush=True)
                local_scores, cluster_scores = notebook_scores(local_root, pairs), notebook_scores(cluster_root, pairs)
                differ += [(size, workers, *pair) for pair in pairs
                           if getattr(local_scores[pair], "cells", None)
                           != getattr(cluster_scores[pair], "cells", None)]
    print("\nstudents  workers  notebooks  local nb/s  cluster nb/s  local s/nb  cluster s/nb  took part")
    for size, workers, count, local, remote, took in rows:
        print(f"{size:>8}  {workers:>7}  {count:>9}  {count / local:>10.3f}  {count / remote:>12.3f}  "
              f"{local / count:>10.2f}  {remote / count:>12.2f}  {took:>9}")
    for size in args.students:
        mine = [row for row in rows if row[0] == size]
        if len(mine) > 1:  # notebooks per second as the workers grow, on this class
            (_, w0, _, l0, r0, _), (_, w1, _, l1, r1, _) = mine[0], mine[-1]
            print(f"{size} students, {w0} -> {w1} workers: local pool {l0 / l1:.2f}x the notebooks per second, "
                  f"cluster {r0 / r1:.2f}x (ideal {w1 / w0:.1f}x where the cores allow)")
    print("scores: identical in both runs" if not differ else f"scores DIFFER for {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
