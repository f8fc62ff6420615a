"""Feedback that shows a test cell's verdict, never what its hidden tests printed or raised.

nbgrader's ClearHiddenTests removes the hidden tests' source from feedback, but their outputs
stay: a failing hidden assertion's traceback quotes the hidden lines, and a hidden test may
print. Before ClearHiddenTests runs, this preprocessor replaces all outputs of every cell that
holds hidden tests with one line: passed, or failed with the error's type and no details.
"""
from __future__ import annotations

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode


class HideHiddenTestOutputs(NbGraderPreprocessor):
    begin_marker = Unicode("BEGIN HIDDEN TESTS").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or self.begin_marker not in cell.source:
            return cell, resources
        errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
        verdict = ("This cell's checks passed.\n" if not errors else
                   f"This cell's checks failed ({errors[0].get('ename', 'error')}). Some of its checks are "
                   "hidden, so their details are not shown; run the public checks in your notebook to see "
                   "theirs.\n")
        cell.outputs = [new_output("stream", name="stdout", text=verdict)]
        return cell, resources
