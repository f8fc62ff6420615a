"""Feedback that shows a test cell's verdict, never a hidden test's source or what it printed.

nbgrader's ClearHiddenTests removes the hidden tests' source from feedback, but their outputs
stay: a failing hidden assertion's traceback quotes the hidden lines, and a hidden test may
print. Before ClearHiddenTests runs, this preprocessor replaces all outputs of every cell that
holds hidden tests with one verdict: passed; or failed with the check's own message, when the
error is a check's verdict written for students (perfcourse.checks.CheckFailed and its kinds,
named in STUDENT_FACING); or failed with the error's type only, for anything else.
"""
from __future__ import annotations

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from ..checks import STUDENT_FACING

MESSAGE_CHARS = 2000  # a verdict is a few lines; anything longer is cut


def shown(message: str) -> str:
    """A check's message as feedback shows it: printable lines, at most MESSAGE_CHARS characters."""
    lines = ["".join(ch if ch.isprintable() else "?" for ch in line) for line in str(message).splitlines()]
    text = "\n".join(lines)
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 3] + "..."


class HideHiddenTestOutputs(NbGraderPreprocessor):
    begin_marker = Unicode("BEGIN HIDDEN TESTS").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or self.begin_marker not in cell.source:
            return cell, resources
        errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
        if not errors:
            verdict = "This cell's checks passed.\n"
        elif errors[0].get("ename") in STUDENT_FACING:
            verdict = f"This cell's checks failed:\n{shown(errors[0].get('evalue', ''))}\n"
        else:
            verdict = (f"This cell's checks failed ({errors[0].get('ename', 'error')}). Some of its checks are "
                       "hidden, so their details are not shown; run the public checks in your notebook to see "
                       "theirs.\n")
        cell.outputs = [new_output("stream", name="stdout", text=verdict)]
        return cell, resources
