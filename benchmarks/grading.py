"""Benchmark: `perfcourse grade` against plain serial `nbgrader autograde`, on one generated class.

    .venv/bin/python benchmarks/grading.py [--students 3] [--workers N]

Builds a class of N students (each hands in one of the samples of every lesson, in turn), copies
it into four scratch courses, and in one run measures:
  - the floor: starting a jax-cpu kernel and importing jax in it (median of 5);
  - plain nbgrader: `nbgrader autograde LESSON` per lesson, serially, as an instructor runs it;
  - `perfcourse grade`: its pool of workers (two per core to start, growing while the cores
    idle), each starting its next notebook's kernels ahead;
  - what each run cost in CPU (CPU-seconds per notebook, from the machine's own accounting, and
    how busy the cores were; for `perfcourse grade`, where the cores idled: its first and last
    five seconds, and between), and for each run the CPU by role: students' kernels,
    trusted kernels, grading workers, the rest, with the kernels of each kind started and about
    how much of their CPU was starting them (the floor's CPU times the starts);
  - where a notebook's seconds on its worker go: its cells (student and grade cells), and the
    rest beyond them (a kernel not started ahead, nbgrader's own steps, teardown), per lesson;
    and the run's wall time per notebook split in the same shares;
  - `perfcourse grade --workers 1`: the same split with one notebook at a time on the machine, so
    what is beyond the cells is the grader's own cost, not a wait for a core;
  - `perfcourse grade` once more beside two processes per core busy in random bursts.
All runs use the course's grader_config.py, so each notebook gets the same kernel, sandbox and
trusted kernel; what differs is how the class is scheduled. It prints the times, their ratio, and the
cost per notebook beside the floor, then checks that every run gave every notebook the same score.
These are one machine's seconds; the ratio is what carries over.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from perfcourse import kernels, release, samples
from perfcourse.busy import BURSTS, busy_machine
from perfcourse.course import copy_course, find_root, lessons
from perfcourse.grading import demand
from perfcourse.nbgrader_bridge import folder, nbgrader_env, notebook_scores

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


def kernel_floor(repeats: int = 5) -> tuple[float, float]:
    """Starting a jax-cpu kernel and importing jax in it: median wall seconds, and median CPU
    seconds the kernel spent doing so (its own process_time, threads included)."""
    from jupyter_client.manager import start_new_kernel

    times, cpu = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        km, kc = start_new_kernel(kernel_name=kernels.DEFAULT, stderr=subprocess.DEVNULL)
        said = []
        kc.execute_interactive("import time, jax, jax.numpy as jnp; jnp.zeros(1).block_until_ready(); "
                               "print(time.process_time())", timeout=60,
                               output_hook=lambda msg: said.append(msg["content"].get("text", "")))
        times.append(time.perf_counter() - started)
        cpu.append(float("".join(said).split()[-1]))
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return statistics.median(times), statistics.median(cpu)


class CpuByRole(threading.Thread):
    """CPU seconds of the processes a command starts, by role, read from /proc every tenth of a
    second while it runs (a process that lives less than that is missed): students' kernels,
    trusted kernels, grading workers, and the rest (the sandboxes' bwrap, helpers, the command).
    It watches both runs alike, so what it costs (about 2 ms a look) slows neither more."""

    def __init__(self):
        super().__init__(daemon=True)
        self.roles: dict[tuple[str, str, str], str] = {}  # (pid, start, name) -> role, once it is one of the named
        self.before: set[tuple[str, str]] = set()
        self.before = {key for key, _ in self._processes()}
        self.seen: dict[tuple[str, str], tuple[float, str]] = {}
        self.done = threading.Event()

    def _processes(self):
        tick = os.sysconf("SC_CLK_TCK")
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as handle:
                    stat = handle.read().decode(errors="replace")
                name, fields = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:].split()
                if (pid, fields[19]) in self.before:
                    continue
                # A command line is read until it names a role: a process renames itself (a forked
                # kernel) or execs (bubblewrap, then the kernel: of the same name) before it is one.
                known = (pid, fields[19], name)
                role = self.roles.get(known)
                if role is None:
                    role = self.role((name, Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")))
                    if role not in ("", "other"):
                        self.roles[known] = role
            except OSError:
                continue
            yield (pid, fields[19]), ((int(fields[11]) + int(fields[12])) / tick, role)

    @staticmethod
    def role(process: tuple[str, list[bytes]]) -> str:
        name, argv = process
        command = b" ".join(argv)
        if not argv or not argv[0]:
            return ""
        # A kernel forked from a fork server (grading/fork_server.py) has the server's command
        # line; it names itself.
        if name in ("student-kernel", "trusted-kernel"):
            return f"{name.replace('-', ' ')}s, forked"
        if b"perfcourse.kernel.forkserver" in argv:
            return "other" if name == "kernel-watcher" else "fork servers"
        if os.path.basename(argv[0]).startswith(b"bwrap") or b"perfcourse.grading.sandbox" in argv:
            return "other"  # a sandbox, or the launcher that starts it
        if b"agent.install" in command:
            return "student kernels"
        if b"capture_fd_output=False" in command:
            return "trusted kernels"
        if b"perfcourse.grading.worker" in command:
            return "grading workers"
        return "other"

    def run(self):
        while not self.done.wait(0.1):
            self.sample()

    def sample(self):
        for key, (cpu, role) in self._processes():
            known = self.seen.get(key)
            role = role or (known[1] if known else "other")  # an exited process has no argv
            if known is None or cpu >= known[0]:
                self.seen[key] = (cpu, role)

    def stop(self) -> dict[str, tuple[float, int]]:
        """role -> (CPU seconds, processes)."""
        self.done.set()
        self.join()
        self.sample()
        roles: dict[str, tuple[float, int]] = {}
        for cpu, role in self.seen.values():
            total, count = roles.get(role, (0.0, 0))
            roles[role] = (total + cpu, count + 1)
        return roles


def recorded(root: Path, pairs) -> dict[tuple[str, str], dict]:
    """Each graded notebook's grading record (GuardedExecute's TIMING_KEY metadata)."""
    import nbformat

    from perfcourse.grading.execute import TIMING_KEY

    found = {}
    for student, lesson in pairs:
        path = folder(root, "autograded", student, lesson) / f"{lesson}.ipynb"
        if path.is_file():
            found[(student, lesson)] = nbformat.read(path, as_version=4).metadata.get(TIMING_KEY) or {}
    return found


def worker_seconds(root: Path) -> dict[tuple[str, str], float]:
    """Each notebook's seconds on its worker, from start to recorded (grades.csv)."""
    import csv

    with open(root / "grades.csv", newline="", encoding="utf-8") as handle:
        return {(row["student_id"], row["assignment"]): float(row["seconds"])
                for row in csv.DictReader(handle) if row.get("seconds")}


def busy_seconds() -> float:
    """CPU-seconds this machine's cores have spent busy since boot (/proc/stat), all processes."""
    idle, total = demand.cpu_times(demand.cores()) or (0, 0)
    return (total - idle) / os.sysconf("SC_CLK_TCK")


class IdleCores(threading.Thread):
    """The cores' idle seconds while a command runs, read from /proc/stat every EVERY seconds, so
    the idle share can be told apart: the first and last EDGE seconds (the command starting its
    workers, the class's last notebooks and the workers ending) and the time between."""

    EVERY, EDGE = 0.5, 5.0

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[float] = []  # idle core-seconds in each interval, in order
        self.done = threading.Event()

    def run(self):
        tick, last = os.sysconf("SC_CLK_TCK"), demand.cpu_times(demand.cores())
        while not self.done.wait(self.EVERY):
            now = demand.cpu_times(demand.cores())
            if now and last:
                self.samples.append((now[0] - last[0]) / tick)
            last = now

    def stop(self) -> str:
        self.done.set()
        self.join()
        edge = max(1, int(self.EDGE / self.EVERY))
        first, last = sum(self.samples[:edge]), sum(self.samples[max(edge, len(self.samples) - edge):])
        between = sum(self.samples) - first - last
        return (f"idle core-seconds: {sum(self.samples):.1f} = first {self.EDGE:g} s {first:.1f} + last "
                f"{self.EDGE:g} s {last:.1f} + between {between:.1f}")


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """The command's wall seconds, and the CPU-seconds the machine was busy meanwhile."""
    busy, started = busy_seconds(), time.perf_counter()
    subprocess.run(command, cwd=cwd, env=nbgrader_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, busy_seconds() - busy


def print_roles(roles: dict[str, tuple[float, int]], notebooks: int, floor_cpu: float) -> None:
    exec_started = {role: roles.get(role, (0.0, 0))[1] for role in ("student kernels", "trusted kernels")}
    print("  CPU-s per notebook by role: " + ", ".join(
        f"{role} {cpu / notebooks:.2f}" + (f" ({exec_started[role]} started, about "
                                          f"{exec_started[role] * floor_cpu / notebooks:.2f} of it "
                                          "starting)" if exec_started.get(role) else "")
        for role, (cpu, _) in sorted(roles.items(), key=lambda item: -item[1][0])), flush=True)


def breakdown(root: Path, pairs, wall: float, per_lesson: bool = True) -> None:
    """Where a graded class's notebooks spent their seconds, from each notebook's grading record:
    on its worker, the cells (student and grade cells, the grader's clock around each) and what is
    beyond them; and the same split of the run's own wall time per notebook."""
    records, seconds = recorded(root, pairs), worker_seconds(root)
    both = [(seconds[key], float(records[key]["cell_seconds"])) for key in records
            if key in seconds and "cell_seconds" in records[key]]
    if not both:
        return
    on_worker = statistics.mean(w for w, _ in both)
    cells = statistics.mean(c for _, c in both)
    beyond = statistics.mean(w - c for w, c in both)
    ahead = sum(bool(r.get("kernel_started_ahead")) for r in records.values())
    print(f"  per notebook on its worker: {on_worker:.2f} s = cells {cells:.2f} s + beyond them {beyond:.2f} s "
          f"(mean of {len(both)}; median beyond {statistics.median(w - c for w, c in both):.2f} s); {ahead} of "
          f"{len(records)} notebooks found their student's kernel started ahead")
    # With several workers a notebook's seconds on its worker include waiting for a core; the
    # run's wall time per notebook, split in the same shares, is what each part costs the class.
    share = beyond / on_worker
    print(f"  per notebook of the run's wall time: {wall / len(pairs):.2f} s = cells "
          f"{wall / len(pairs) * (1 - share):.2f} s + beyond them {wall / len(pairs) * share:.2f} s")
    # Beyond the cells, in the grader's own clock: starting (or taking) the kernels before the
    # first cell, the first grade cell's wait for the trusted kernel's imports, teardown, and the
    # rest of the worker's time (nbgrader's own steps: reading, sanitizing, writing the notebook
    # and the gradebook).
    phased = [(seconds[key], records[key]) for key in records
              if key in seconds and "preprocess_seconds" in records[key]]
    if phased:
        def mean(field):
            return statistics.mean(float(r[field]) for _, r in phased)
        own = statistics.mean(w - float(r["preprocess_seconds"]) for w, r in phased)
        print(f"  beyond the cells: kernels up {mean('start_seconds'):.2f} s, trusted kernel's imports "
              f"{mean('trusted_wait_seconds'):.2f} s, teardown {mean('teardown_seconds'):.2f} s, "
              f"nbgrader's own steps {own:.2f} s (means per notebook)")
    if not per_lesson:
        return
    by_lesson: dict[str, list[dict]] = {}
    for (_, lesson), record in sorted(records.items(), key=lambda item: item[0][1]):
        by_lesson.setdefault(lesson, []).append(record)
    # What each lesson's instruments cost: timers hold calls (wall time, no CPU), verified
    # programs are parsed in a trusted kernel that is then replaced for the next notebook.
    for lesson, found in by_lesson.items():
        parsed = sum(bool(r.get("trusted_kernel_tainted")) for r in found)
        print(f"  {lesson:<18} cells median {statistics.median(float(r['cell_seconds']) for r in found):5.2f} s, "
              f"grade cells {statistics.median(float(r['grade_cell_seconds']) for r in found):5.2f} s; "
              f"{parsed} of {len(found)} parsed a student's program (a fresh trusted kernel after)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--workers", type=int)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="perfcourse-bench-") as scratch:
        serial_root = copy_course(ROOT, Path(scratch) / "serial")
        release.generate(serial_root)
        pairs = build_class(serial_root, args.students)
        parallel_root, alone_root = Path(scratch) / "parallel", Path(scratch) / "one-worker"
        loaded_root = Path(scratch) / "under-load"
        for root in (parallel_root, alone_root, loaded_root):
            shutil.copytree(serial_root, root)
        print(f"class: {args.students} students, {len(pairs)} notebooks, {len(lessons(serial_root))} lessons",
              flush=True)

        floor, floor_cpu = kernel_floor()
        print(f"floor (start a jax-cpu kernel, import jax): {floor:.2f} s, {floor_cpu:.2f} CPU-s (medians of 5)",
              flush=True)

        watch = CpuByRole()
        watch.start()
        runs = [timed([sys.executable, "-m", "nbgrader", "autograde", lesson, "--force"], serial_root)
                for lesson in lessons(serial_root)]
        serial_roles = watch.stop()
        serial, serial_cpu = sum(wall for wall, _ in runs), sum(cpu for _, cpu in runs)
        print(f"plain nbgrader autograde, serial:  {serial:7.1f} s  {serial / len(pairs):5.2f} s per notebook, "
              f"{serial_cpu / len(pairs):5.2f} CPU-s per notebook", flush=True)
        print_roles(serial_roles, len(pairs), floor_cpu)

        command = [sys.executable, "-m", "perfcourse.cli", "grade"]
        command += ["--workers", str(args.workers)] if args.workers else []
        watch, idle = CpuByRole(), IdleCores()
        watch.start()
        idle.start()
        parallel, parallel_cpu = timed(command, parallel_root)
        roles = watch.stop()
        print(f"perfcourse grade, parallel:        {parallel:7.1f} s  {parallel / len(pairs):5.2f} s per notebook, "
              f"{parallel_cpu / len(pairs):5.2f} CPU-s per notebook ({len(demand.cores())} cores: "
              f"{parallel_cpu / parallel / len(demand.cores()):.0%} busy)")
        print(f"  {idle.stop()}")
        # Where the CPU goes: on 2 cores the pool is CPU-bound, so CPU-seconds per notebook set its pace.
        print_roles(roles, len(pairs), floor_cpu)
        print(f"speed-up: {serial / parallel:.2f}x; per-notebook cost {parallel / len(pairs) / floor:.2f}x the floor "
              f"(serial: {serial / len(pairs) / floor:.2f}x)")
        breakdown(parallel_root, pairs, parallel)

        # One worker alone on the machine: each notebook's seconds with no other notebook beside
        # it, so what is beyond its cells is the grader's own cost, not a wait for a core.
        alone, _ = timed([sys.executable, "-m", "perfcourse.cli", "grade", "--workers", "1"], alone_root)
        print(f"perfcourse grade, one worker:      {alone:7.1f} s  {alone / len(pairs):5.2f} s per notebook",
              flush=True)
        breakdown(alone_root, pairs, alone, per_lesson=False)
        # The same class once more, beside another user's bursts of work: the scores must not move.
        with busy_machine(BURSTS) as others:
            loaded, _ = timed(command, loaded_root)
        print(f"perfcourse grade, under load:      {loaded:7.1f} s  {loaded / len(pairs):5.2f} s per notebook "
              f"(beside {others} processes busy in random bursts)", flush=True)

        roots = (serial_root, parallel_root, alone_root, loaded_root)
        scores = [notebook_scores(root, pairs) for root in roots]
        differ = [pair for pair in pairs if len({repr(getattr(found[pair], "cells", None)) for found in scores}) > 1]
        print(f"scores: identical in all {len(roots)} runs" if not differ else f"scores DIFFER for {differ}")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
