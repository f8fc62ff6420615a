"""Execute a lesson's source notebook with papermill and collect what its artifact records."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import papermill
from papermill.exceptions import PapermillExecutionError

from ..course import FIGURE_TAG, CourseError, read_notebook, source_notebook
from ..kernels import manager_class, require

ARTIFACT_MIME = "application/vnd.perfcourse.artifact+json"
ENVIRONMENT_MIME = "application/vnd.perfcourse.environment+json"
REPORT_TAG = "report"

# Appended to the executed copy (never to source/): the kernel says what it really ran on.
ENVIRONMENT_PROBE = f"""
import jax as _jax, matplotlib as _mpl, numpy as _np
from IPython.display import display as _display
_display({{{ENVIRONMENT_MIME!r}: {{
    "backend": _jax.default_backend(), "deviceCount": _jax.device_count(),
    "jax": _jax.__version__, "numpy": _np.__version__, "matplotlib": _mpl.__version__,
}}}}, raw=True)
"""


@dataclass
class ExecutedLesson:
    lesson: str
    source: nbformat.NotebookNode
    environment: dict
    stdout: str
    data: dict
    diagram: dict | None
    figures: list[bytes] = field(default_factory=list)  # the PNGs the figure cells drew, in order


def _bundles(nb, mime: str) -> list:
    return [out["data"][mime] for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if mime in out.get("data", {})]


def figure_images(nb) -> list[bytes]:
    """The image/png outputs of the notebook's figure cells: the figure a student sees."""
    return [base64.b64decode(out["data"]["image/png"]) for cell in nb.cells
            if cell.cell_type == "code" and FIGURE_TAG in cell.metadata.get("tags", [])
            for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]


def _report_stdout(nb) -> str:
    return "".join(
        out.get("text", "") for cell in nb.cells
        if cell.cell_type == "code" and REPORT_TAG in cell.metadata.get("tags", [])
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream" and out.get("name") == "stdout"
    )


def execute(root: Path, lesson: str, kernel: str, progress: bool = True) -> ExecutedLesson:
    path = source_notebook(root, lesson)
    source = read_notebook(path)
    require(kernel)
    runnable = nbformat.from_dict(json.loads(nbformat.writes(source)))
    runnable.cells.append(nbformat.v4.new_code_cell(ENVIRONMENT_PROBE.strip()))
    try:
        executed = papermill.execute_notebook(
            runnable, None, kernel_name=kernel, cwd=str(path.parent),
            progress_bar=progress, log_output=False, kernel_manager_class=manager_class(),
        )
    except PapermillExecutionError as exc:
        raise CourseError(
            f"{path}: cell {exc.exec_count} raised {exc.ename}: {exc.evalue} (kernel {kernel})"
        ) from None
    environments = _bundles(executed, ENVIRONMENT_MIME)
    artifacts = _bundles(executed, ARTIFACT_MIME)
    if not artifacts:
        raise CourseError(f"{path}: the notebook displayed no {ARTIFACT_MIME} bundle (its panels)")
    figures = figure_images(executed)
    if not figures:
        raise CourseError(f"{path}: its {FIGURE_TAG!r} cells drew no figure (no image/png output): "
                          f"draw it with draw(panels, diagram) and plt.show()")
    bundle = artifacts[-1]
    return ExecutedLesson(lesson, source, environments[-1], _report_stdout(executed),
                          bundle["data"], bundle.get("diagram"), figures)
