"""Feedback: a cell with hidden tests shows its verdict, with a check's own message when the
error is a check's verdict for students, and nothing else of the hidden tests (fast tier)."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from perfcourse.checks import STUDENT_FACING, CheckFailed, audit, trusted
from perfcourse.grading.cell_error import MESSAGE_CHARS
from perfcourse.grading.feedback import HideHiddenTestOutputs

HIDDEN = "x = 1\n### BEGIN HIDDEN TESTS\nsecret_input = 42\ncheck(x)\n### END HIDDEN TESTS"


def feedback_of(*outputs) -> str:
    nb = new_notebook(cells=[new_code_cell(HIDDEN, outputs=list(outputs))])
    nb, _ = HideHiddenTestOutputs().preprocess(nb, {})
    (out,) = nb.cells[0].outputs
    return out["text"]


def error(ename, evalue):
    return new_output("error", ename=ename, evalue=evalue,
                      traceback=[f"secret_input = 42 in the traceback", f"{ename}: {evalue}"])


def test_a_checks_verdict_is_shown_and_nothing_else():
    printed = new_output("stream", name="stdout", text="hidden test printed secret_input=42\n")
    text = feedback_of(printed, error("CheckFailed", "the clock was read before the result of call 3 was ready"))
    assert text == "This cell's checks failed:\nthe clock was read before the result of call 3 was ready\n"


def test_any_other_error_shows_its_type_only():
    text = feedback_of(error("AssertionError", "Not equal to tolerance: x: array([42.])"))
    assert "AssertionError" in text and "42" not in text and "tolerance" not in text


def test_passed_cells_say_so_and_long_or_odd_messages_are_tamed():
    assert feedback_of() == "This cell's checks passed.\n"
    text = feedback_of(error("AuditFailure", "line one\n\x1b[31mred\x1b[0m\n" + "y" * 5000))
    assert "\x1b" not in text and len(text) < MESSAGE_CHARS + 100 and text.rstrip().endswith("...")


def test_every_kind_of_check_failure_is_named_student_facing():
    kinds = {CheckFailed, audit.AuditFailure, trusted.UntrustedResult}
    found = set(CheckFailed.__subclasses__()) | {CheckFailed}
    assert found <= kinds and {k.__name__ for k in kinds} == set(STUDENT_FACING)
    assert all(issubclass(k, AssertionError) for k in kinds)  # nbgrader scores them as failures
