"""A tag in a student's notebook never skips a cell: nbclient does not run a cell tagged
"skip-execution", and a grade cell that never runs shows no error, which nbgrader scores as passed
(the untouched release with that tag on every grade cell scored 8/8 on performance-01)."""
from nbformat.v4 import new_code_cell

from perfcourse.grading.cell_roles import run_anyway
from perfcourse.grading.execute import GuardedExecute


def test_the_skip_tag_is_removed_before_a_cell_runs():
    tag = GuardedExecute().skip_cells_with_tag
    assert tag == "skip-execution"
    cell = new_code_cell("# Public checks", metadata={"tags": ["keep", tag], "nbgrader": {"grade": True}})
    run_anyway(cell, tag)
    assert cell.metadata["tags"] == ["keep"]
    untagged = new_code_cell("x = 1")
    run_anyway(untagged, tag)
    assert "tags" not in untagged.metadata
