"""What the lesson tests share: a lesson's cells run in this process, and its samples judged by its checks.

A lesson's test file names its checks (grade cell -> a call of the check on a namespace), the solution
cell each grade cell judges, and the given cells the solutions use; these helpers run the sample's
cells and hold the rules every lesson's samples keep.
"""
from __future__ import annotations

from perfcourse.checks import CheckFailed


def lesson_namespace(nb, given: tuple[str, ...], prelude: str = "") -> dict:
    """The namespace of the lesson's given cells (each found by a line it holds) and its solution cells."""
    namespace: dict = {}
    if prelude:
        exec(prelude, namespace)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (any(mark in cell.source for mark in given) or meta.get("solution")):
            exec(cell.source, namespace)
    return namespace


def judged_cells(sample, namespace: dict, checks: dict, solution_cell: dict, *arguments) -> tuple[dict, dict]:
    """(passed, expected) for each grade cell whose solution cell the sample wrote itself (all of them for
    the solution); a cell the sample left as the solution's must expect points."""
    replaced = {target for verb, target, _ in sample.steps if verb == "replace"}
    passed, expected = {}, {}
    for cell, check in checks.items():
        if sample.case != "solution" and solution_cell[cell] not in replaced:
            assert sample.expected[cell] > 0, f"{sample.case} keeps the solution's {solution_cell[cell]} cell"
            continue
        expected[cell] = sample.expected[cell] > 0
        try:
            check(namespace, *arguments)
            passed[cell] = True
        except CheckFailed:
            passed[cell] = False
    return passed, expected


def assert_samples_cover_every_cell(samples: dict, checks: dict) -> None:
    """Each wrong sample loses exactly one cell, every cell has one, at least 7 wrong and 3 correct."""
    lost = {}
    for case, sample in samples.items():
        zeros = [cell for cell, points in sample.expected.items() if points == 0]
        assert len(zeros) in (0, 1, len(checks)), (case, zeros)
        if len(zeros) == 1:
            lost.setdefault(zeros[0], []).append(case)
    assert set(lost) == set(checks), f"a wrong sample for every cell: {sorted(lost)}"
    assert sum(map(len, lost.values())) >= 7
    assert sum(1 for s in samples.values() if not any(p == 0 for p in s.expected.values())) >= 3
