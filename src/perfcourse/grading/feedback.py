"""Feedback that shows a test cell's verdict, never a hidden test's source or what it printed.

nbgrader's ClearHiddenTests removes the hidden tests' source from feedback, but their outputs
stay: a failing hidden assertion's traceback quotes the hidden lines, and a hidden test may
print. Before ClearHiddenTests runs, this preprocessor replaces all outputs of every cell that
holds hidden tests with one verdict: passed; or failed with what grading/cell_error.py lets a
student read of the error (a check's verdict, the student's own exception or a failed public
check's message), else with the error's type only. And every notebook it sees is sanitized first
(grading/sanitize.py `sanitize_html`: a student's HTML, JavaScript and Markdown markup never run
in the feedback page), whether or not grading sanitized it already.
"""
from __future__ import annotations

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from .cell_error import HIDDEN_MARKER, shown
from .sanitize import sanitize_html


class HideHiddenTestOutputs(NbGraderPreprocessor):
    begin_marker = Unicode(HIDDEN_MARKER).tag(config=True)

    def preprocess(self, nb, resources):
        sanitize_html(nb)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or self.begin_marker not in cell.source:
            return cell, resources
        found = shown(cell, self.begin_marker)
        if found is None:
            verdict = "This cell's checks passed.\n"
        elif found[0] != "type":
            verdict = f"This cell's checks failed:\n{found[1]}\n"
        else:
            verdict = (f"This cell's checks failed ({found[1]}). Some of its checks are hidden, so their details "
                       "are not shown; run the public checks in your notebook to see theirs.\n")
        cell.outputs = [new_output("stream", name="stdout", text=verdict)]
        return cell, resources
