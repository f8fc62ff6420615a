"""The grader's side of grading on a cluster: nbgrader's autograde, with the execution done elsewhere.

`perfcourse grade --cluster` has a Dask worker run the course's GuardedExecute on a student's
notebook (grading/cluster.py). The course's own machine then runs plain nbgrader autograde on the
same submission with `ReplayExecution` in GuardedExecute's place: nbgrader sanitizes the submitted
notebook against the course's gradebook as always, this step takes the outputs the worker's
kernels produced, and nbgrader's own preprocessors after it (LimitOutput, SaveAutoGrades,
AssignLatePenalties, ...) write autograded/ and the gradebook at its db_url, SQLite or PostgreSQL.

What comes back from a worker is treated as untrusted-ish data: the grader made it, but the
student's code made its outputs. So only outputs cross: every cell's type, source and nbgrader
metadata must be exactly those of the notebook nbgrader sanitized here (a worker cannot change a
test, its points or its id), the notebook must have graded this very submission (its digest), and
nothing else of the worker's notebook is kept but the evidence flags and timings GuardedExecute
writes, checked for shape.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from ..kernel.evidence import EVIDENCE_KEY
from .execute import TIMING_KEY
from .nbgrader_folders import keep_only_notebooks

MAX_NOTEBOOK_BYTES = 32 << 20  # one executed notebook as it comes back from a worker


class ExecutionRefused(ValueError):
    """An executed notebook from a worker that does not match the notebook it stands for."""


class ReplayExecution(NbGraderPreprocessor):  # enabled, as nbgrader's own steps are
    executed = Unicode("", help="Folder holding <student>/<assignment>/<notebook>.ipynb as executed on a "
                                "worker (perfcourse grade --cluster)").tag(config=True)

    def preprocess(self, nb, resources):
        from nbgrader.coursedir import CourseDirectory

        from .scratch import check_submission, digest

        info = resources["nbgrader"]
        student, lesson, name = info["student"], info["assignment"], info["notebook"]
        if not self.executed:
            raise ExecutionRefused("ReplayExecution.executed is not set")
        ran = read_executed(Path(self.executed) / student / lesson / f"{name}.ipynb")
        directory = CourseDirectory(config=self.config)
        submitted = Path(directory.format_path(directory.submitted_directory, student, lesson))
        source = Path(directory.format_path(directory.source_directory, ".", lesson)) / f"{name}.ipynb"
        check_submission(submitted)
        graded = (ran.metadata.get(TIMING_KEY) or {}).get("submission")
        if graded != digest(submitted, source):
            raise ExecutionRefused(f"the worker graded another version of {student}/{lesson} "
                                   "(its submission or the lesson's source notebook differs from this course's)")
        merge_outputs(nb, ran)
        path = (resources.get("metadata") or {}).get("path")
        autograded = Path(directory.format_path(directory.autograded_directory, student, lesson))
        if path and Path(path).resolve() == autograded.resolve():
            keep_only_notebooks(autograded)  # as GuardedExecute leaves it
        return nb, resources


def read_executed(path: Path) -> nbformat.NotebookNode:
    try:
        size = path.stat().st_size
    except OSError:
        raise ExecutionRefused(f"the worker sent no executed {path.name}") from None
    if size > MAX_NOTEBOOK_BYTES:
        raise ExecutionRefused(f"the executed {path.name} is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
    return parse_executed(path.read_text(encoding="utf-8"), path.name)


def parse_executed(text: str, label: str = "notebook") -> nbformat.NotebookNode:
    """An executed notebook's JSON text, parsed and validated against nbformat's schema."""
    if len(text) > MAX_NOTEBOOK_BYTES:
        raise ExecutionRefused(f"the executed {label} is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several kinds for malformed content
        raise ExecutionRefused(f"the executed {label} is not a valid notebook ({str(exc)[:200]})") from None
    return nb


def merge_outputs(nb, ran) -> None:
    """Put `ran`'s outputs into `nb` (sanitized here), cell by cell; refuse any other difference."""
    if len(ran.cells) != len(nb.cells):
        raise ExecutionRefused(f"the executed notebook has {len(ran.cells)} cells, the submission {len(nb.cells)}")
    for index, (mine, theirs) in enumerate(zip(nb.cells, ran.cells)):
        if (theirs.cell_type, theirs.source) != (mine.cell_type, mine.source) \
                or theirs.metadata.get("nbgrader") != mine.metadata.get("nbgrader"):
            raise ExecutionRefused(f"cell {index} of the executed notebook is not the submission's cell "
                                   "(its type, source or nbgrader metadata differ)")
    flags = ran.metadata.get(EVIDENCE_KEY, [])
    timing = ran.metadata.get(TIMING_KEY)
    if not isinstance(flags, list) or not all(isinstance(flag, str) for flag in flags):
        raise ExecutionRefused(f"the executed notebook's {EVIDENCE_KEY} is not a list of lines")
    if not isinstance(timing, dict):
        raise ExecutionRefused(f"the executed notebook has no {TIMING_KEY} record")
    # Everything is checked: only now does anything of it go into the notebook nbgrader records.
    for mine, theirs in zip(nb.cells, ran.cells):
        if mine.cell_type == "code":
            mine.outputs = theirs.get("outputs", [])
            mine.execution_count = theirs.get("execution_count")
    nb.metadata[EVIDENCE_KEY] = flags
    nb.metadata[TIMING_KEY] = timing
    language = ran.metadata.get("language_info")
    if isinstance(language, dict):
        nb.metadata["language_info"] = language
