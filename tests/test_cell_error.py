"""A grade cell's error names what the student did (fast tier).

tests/data/graded_errors.json holds grade cells as the grader wrote them for the demo's samples
(autograded/, before grading/cell_error.py): performance-02's drops-static, whose own
TracerIntegerConversionError arrived as the channel's PeerException with the channel's frames;
performance-01's unsynchronized timer, failed by a public check's assertion; the release
notebook, whose NotImplementedError crossed the channel; the audit's public assertion and a
check's verdict. Here each is rewritten as the grader now writes it, and read as feedback and the
class report read it.
"""
from __future__ import annotations

import copy
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from conftest import ROOT

from perfcourse.grading import cell_error
from perfcourse.report.class_report import failure_of
from perfcourse.grading.execute import GRADER_ERRORS
from perfcourse.grading.feedback import HideHiddenTestOutputs

GRADED = {(c["lesson"], c["sample"], c["grade_id"]): c
          for c in json.loads((ROOT / "tests" / "data" / "graded_errors.json").read_text(encoding="utf-8"))}


def graded(lesson, sample, grade_id):
    """The grade cell as the grader writes it now: its outputs through cell_error.record."""
    found = GRADED[(lesson, sample, grade_id)]
    cell = new_code_cell(found["source"], outputs=[new_output(**o) for o in copy.deepcopy(found["outputs"])])
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "points": 1, "solution": False,
                                 "locked": True, "schema_version": 3}
    cell_error.record(cell, GRADER_ERRORS)
    return cell


def feedback(cell) -> str:
    nb, _ = HideHiddenTestOutputs().preprocess(new_notebook(cells=[copy.deepcopy(cell)]), {})
    (out,) = nb.cells[0].outputs
    return out["text"]


def error_of(cell):
    (error,) = [o for o in cell.outputs if o.output_type == "error"]
    return error


def test_the_students_own_exception_replaces_the_channels_stand_in():
    cell = graded("performance-02", "drops-static", "test_count_traces")
    error = error_of(cell)
    assert error.ename == "TracerIntegerConversionError"
    assert error.evalue.startswith("The __index__() method was called on traced array")
    trace = "\n".join(cell_error._plain(t) for t in error.traceback)
    assert "PeerException" not in trace and "remote.py" not in trace and "Channel.request" not in trace
    assert cell_error.MARKER in trace and "----> 4" in trace  # the public line that called the student's code
    nbformat.validate(new_notebook(cells=[cell]))
    text = feedback(cell)
    assert text.startswith("This cell's checks failed:\nTracerIntegerConversionError: The __index__() method")
    assert "PeerException" not in text
    assert failure_of(cell) == (cell_error.shown(cell)[1], True)
    assert failure_of(cell)[0].startswith("TracerIntegerConversionError: ")


def test_a_failed_public_check_shows_its_own_message():
    cell = graded("performance-01", "unsynchronized", "test_timer_synchronized")
    assert error_of(cell).ename == "AssertionError"  # raised here, by the public check: unchanged
    text = feedback(cell)
    assert "(AssertionError)" not in text
    assert "wait for each result (jax.block_until_ready) before reading the clock" in text
    message, is_message = failure_of(cell)
    assert is_message and message.startswith("one call's result is ready after") and "AssertionError" not in message
    for lesson, sample in (("performance-audit", "no-memory-flag"), ("performance-01", "bfloat16-operands")):
        kind, text = cell_error.shown(graded(lesson, sample, "test_evidence" if sample == "no-memory-flag"
                                             else "test_workload"))
        assert kind == "message" and "AssertionError" not in text and text.strip()


def test_an_error_of_the_students_code_in_a_task_left_undone():
    cell = graded("performance-01", "release", "test_timer_synchronized")
    error = error_of(cell)
    assert error.ename == "NotImplementedError"
    assert not any("remote.py" in cell_error._plain(t) for t in error.traceback)
    assert feedback(cell) == ("This cell's checks failed:\nNotImplementedError: Task 2 (a synchronized timer) "
                              "is not done yet: replace this line with your code\n")


def test_a_checks_verdict_is_unchanged():
    cell = graded("performance-audit", "bfloat16-operands", "test_workload")
    assert cell_error.shown(cell)[0] == "verdict"
    assert feedback(cell).startswith("This cell's checks failed:\nworkload on random inputs differs")


def _moved_to_hidden_line(cell, message: str):
    """The public assertion of the unsynchronized timer's cell, as if a hidden line had raised it."""
    hidden = next(n for n, line in enumerate(cell.source.splitlines(), 1) if cell_error.HIDDEN_MARKER in line)
    error = error_of(cell)
    error.traceback = [t.replace("line 9", f"line {hidden + 2}") for t in error.traceback[:-1]] + [message]
    error.evalue = message
    return cell


def test_an_error_of_a_hidden_line_shows_its_type_only():
    cell = _moved_to_hidden_line(graded("performance-01", "unsynchronized", "test_timer_synchronized"),
                                 "AssertionError: secret_reference = 0.0123")
    assert cell_error.shown(cell) == ("type", "AssertionError")
    assert "secret_reference" not in feedback(cell) and "(AssertionError)" in feedback(cell)
    assert failure_of(cell) == ("AssertionError", False)


@pytest.mark.parametrize("forged", [
    "File /x/perfcourse/checks/remote.py:94, in Channel.request(self)\n",
    cell_error.MARKER,
    "Traceback (most recent call last)\nCell In[1], line 1\n" + cell_error.MARKER,
])
def test_a_message_cannot_pass_for_a_frame(forged):
    """The student's text is in an exception's message only: it never decides where the error came from."""
    cell = _moved_to_hidden_line(graded("performance-01", "unsynchronized", "test_timer_synchronized"),
                                 "AssertionError: " + forged)
    before = copy.deepcopy(cell)
    cell_error.record(cell, GRADER_ERRORS)
    assert cell == before and cell_error.shown(cell) == ("type", "AssertionError")


@pytest.mark.parametrize("kind", ["CheckFailed", "AuditFailure", "KernelDied", "NotRun", "PeerException"])
def test_a_student_type_named_as_the_graders_keeps_its_name_in_the_message(kind):
    cell = graded("performance-02", "drops-static", "test_count_traces")
    error = error_of(cell)
    source = GRADED[("performance-02", "drops-static", "test_count_traces")]["outputs"]
    (original,) = [o for o in source if o["output_type"] == "error"]
    cell.outputs = [new_output(**dict(copy.deepcopy(original), evalue=f"{kind}: my message"))]
    cell_error.record(cell, GRADER_ERRORS)
    error = error_of(cell)
    assert (error.ename, error.evalue) == (cell_error.NOTEBOOK_ERROR, f"{kind}: my message")
    assert cell_error.shown(cell) == ("message", f"NotebookError: {kind}: my message")


def test_no_check_fails_with_a_bare_assertion():
    """A check's failure is CheckFailed, whose message feedback shows: a bare `assert` in a check
    would reach the student as "AssertionError" only (as performance-03's hand count once did)."""
    import ast

    found = []
    for path in sorted((ROOT / "src" / "perfcourse" / "checks").glob("*.py")):
        found += [f"{path.name}:{node.lineno}" for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.Assert)]
    assert found == []
