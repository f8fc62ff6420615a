"""`perfcourse solved`: every lesson's release notebook, filled with its solution sample
(samples/<lesson>/solution.py), executed top to bottom on a kernel, as a student runs it.

It is how the course is tried on a backend grading never sees (a TPU, a GPU): the release
notebook carries the public checks only, so a failure here is one a student meets. Every cell
runs (an error does not stop the notebook), so one run names every failing cell.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from . import samples
from .course import CourseError
from .kernels import manager_class, require

CELL_TIMEOUT = 600  # seconds: performance-07's sweep is the longest cell on a CPU


@dataclass
class Failure:
    cell: int        # the cell's index in the notebook
    ename: str
    evalue: str


def solution_sample(root: Path, lesson: str) -> samples.Sample:
    found = [s for s in samples.discover(root, [lesson]) if s.case == "solution"]
    if not found:
        raise CourseError(f"samples/{lesson}/solution.py is missing: the solved release needs it")
    return found[0]


def execute(root: Path, lesson: str, kernel: str, keep: Path | None = None) -> list[Failure]:
    """Run the solved release notebook in a fresh folder; the failing cells, in order."""
    require(kernel)
    nb = samples.build(root, solution_sample(root, lesson))
    with tempfile.TemporaryDirectory(prefix=f"{lesson}-") as workdir:
        NotebookClient(nb, kernel_name=kernel, timeout=CELL_TIMEOUT, allow_errors=True,
                       kernel_manager_class=manager_class(),
                       resources={"metadata": {"path": workdir}}).execute()
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, keep / f"{lesson}.ipynb")
    return [Failure(index, out.get("ename", ""), out.get("evalue", "")) for index, cell in enumerate(nb.cells)
            if cell.cell_type == "code" for out in cell.get("outputs", []) if out.get("output_type") == "error"]
