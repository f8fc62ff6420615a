"""Benchmark: what an oversized or pathological cell costs the grader, against an honest notebook.

    .venv/bin/python benchmarks/hostile_cells.py [--lesson performance-04]

Three submissions of the lesson's solution: as it is (the baseline), with 4 MiB of code added to
one cell, and with 30 lines of 900-link attribute chains added (a cell that made the scan's walk
quadratic). For each, in a fresh process, it runs what the grader runs on a submission before and
beside its kernels: the survey's checks (`scratch.check_cells`, refusing what is too large) and,
for what passes them, the code scan in its bounded process (`bounded_scan.scan`). It prints each
one's seconds and peak memory (VmHWM of the process and of the scan's child), and the ratio to the
baseline's. Every number is one run on this machine.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from perfcourse import samples
from perfcourse.course import find_root

MEASURE = r"""
import json, sys, time
import nbformat
from perfcourse.course import read_notebook
from perfcourse.grading import bounded_scan, code_scan, scratch

began = time.perf_counter()
nb = read_notebook(sys.argv[1])
try:
    scratch.check_cells(nb)
    outcome = bounded_scan.scan(code_scan.code_cells(nb))
except scratch.SubmissionRefused as exc:
    outcome = f"refused: {exc}"
seconds = time.perf_counter() - began


def peak_mib(pid="self"):  # VmHWM, not ru_maxrss: a process's maxrss keeps its forking parent's through exec
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


child = bounded_scan._child
print(json.dumps({"seconds": seconds, "mib": peak_mib(), "scan_mib": peak_mib(child.pid) if child else 0.0,
                  "outcome": outcome}))
"""


def variants(root: Path, lesson: str) -> dict[str, nbformat.NotebookNode]:
    solution = next(s for s in samples.discover(root, [lesson]) if s.case == "solution")
    built = {}
    for name, extra in (("honest", ""), ("4 MiB cell", "x=1\n" * (1 << 20)),
                        ("quadratic lines", "if False:\n" + "".join(
                            f"    q{i} = {'.'.join(['a'] * 900)}\n" for i in range(30)))):
        nb = samples.build(root, solution)
        cell = next(c for c in nb.cells if c.cell_type == "code" and "nbgrader" in c.metadata
                    and c.metadata["nbgrader"].get("solution"))
        cell.source += "\n" + extra
        built[name] = nb
    return built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lesson", default="performance-04")
    args = parser.parse_args()
    root = find_root(Path.cwd())
    results = {}
    with tempfile.TemporaryDirectory() as scratch_dir:
        for name, nb in variants(root, args.lesson).items():
            path = Path(scratch_dir) / f"{name.replace(' ', '-')}.ipynb"
            nbformat.write(nb, path)
            proc = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True,
                                  check=True)
            results[name] = json.loads(proc.stdout)
    base = results["honest"]
    print(f"{'submission':18s} {'seconds':>8s} {'x base':>7s} {'MiB':>6s} {'x base':>7s} {'scan MiB':>9s}  outcome")
    for name, r in results.items():
        print(f"{name:18s} {r['seconds']:8.2f} {r['seconds'] / base['seconds']:7.2f} {r['mib']:6.0f} "
              f"{r['mib'] / base['mib']:7.2f} {r['scan_mib']:9.0f}  {str(r['outcome'])[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
