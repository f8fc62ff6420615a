"""An artifact's figure as one PNG, and its alt text; and the check of what the figure can draw.

The drawing itself is figure.py (standard library and matplotlib only), the code the lessons'
notebooks also run, so a student sees the figure the artifact image shows. Same artifact, same
matplotlib: same bytes (no timestamps in the PNG), so a check can redraw an artifact and compare.
The artifacts' rendererHash covers this file and figure.py (record.renderer_hash).
"""
from __future__ import annotations

import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..course import CourseError  # noqa: E402
from . import figure  # noqa: E402

DPI = 100
PANEL_KINDS = ("bar", "line")
DIAGRAM_KINDS = ("timeline", "flow")
YSCALES = ("linear", "log")
DIAGRAM_FIELDS = ("title", "prediction", "reading", "alt", "scope", "height", "panel")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_data(data, diagram, name: str) -> None:
    """Raise one CourseError naming what in `data` or `diagram` the figure cannot draw."""
    if not isinstance(data, dict) or data.get("kind") != "panels" or not isinstance(data.get("panels"), list):
        raise CourseError(f"{name}: data must be {{'kind': 'panels', 'panels': [...]}}")
    for i, panel in enumerate(data["panels"]):
        where = f"{name}: panel {i}"
        if not isinstance(panel, dict) or panel.get("kind") not in PANEL_KINDS:
            raise CourseError(f"{where}: kind must be one of {', '.join(PANEL_KINDS)}")
        where = f"{name}: panel {i} ({panel.get('title')!r})"
        for key in ("title", "ylabel", "series"):
            if key not in panel:
                raise CourseError(f"{where}: missing {key!r}")
        axis = panel["labels"] if panel["kind"] == "bar" else panel.get("x")
        if not isinstance(axis, list):
            raise CourseError(f"{where}: a {panel['kind']} panel needs "
                              + ("'labels'" if panel["kind"] == "bar" else "'x'"))
        if panel.get("yscale", "linear") not in YSCALES:
            raise CourseError(f"{where}: 'yscale' must be one of {', '.join(YSCALES)}, "
                              f"not {panel['yscale']!r}")
        if "integer" in panel and not isinstance(panel["integer"], bool):
            raise CourseError(f"{where}: 'integer' must be true or false, not {panel['integer']!r}")
        if not isinstance(panel["series"], list):
            raise CourseError(f"{where}: 'series' must be a list")
        log = panel.get("yscale") == "log"
        for series in panel["series"]:
            if not isinstance(series, dict) or not isinstance(series.get("label"), str) \
                    or not isinstance(series.get("y"), list) or len(series["y"]) != len(axis):
                raise CourseError(f"{where}: each series needs a label and {len(axis)} y values")
            values = [y for y in series["y"] if y is not None]
            if not all(_number(y) for y in values):
                raise CourseError(f"{where}: series {series['label']!r}: y values must be numbers or null")
            if "samples" in series:
                samples = series["samples"]
                if not isinstance(samples, list) or len(samples) != len(axis) or not all(
                        isinstance(s, list) and all(_number(v) for v in s) for s in samples):
                    raise CourseError(f"{where}: series {series['label']!r}: 'samples' must hold one list "
                                      f"of numbers per {'label' if panel['kind'] == 'bar' else 'x'} "
                                      f"({len(axis)} lists)")
                values += [v for s in samples for v in s]
            if log and not all(v > 0 for v in values):
                raise CourseError(f"{where}: series {series['label']!r}: a log axis ('yscale': 'log') "
                                  f"needs positive values")
    if diagram is not None:
        missing = [k for k in DIAGRAM_FIELDS if k not in diagram]
        if missing:
            raise CourseError(f"{name}: diagram is missing {', '.join(missing)}")
        if diagram["panel"].get("kind") not in DIAGRAM_KINDS:
            raise CourseError(f"{name}: diagram kind must be one of {', '.join(DIAGRAM_KINDS)}")
        if diagram["panel"]["kind"] == "flow":
            steps = diagram["panel"].get("steps")
            if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
                raise CourseError(f"{name}: a flow diagram needs 'steps', a list of labels")
            notes = diagram["panel"].get("notes", [])
            if not isinstance(notes, list) or len(notes) not in (0, len(steps)) \
                    or not all(isinstance(n, str) for n in notes):
                raise CourseError(f"{name}: a flow diagram's 'notes' has one label per step")


def draw(artifact: dict) -> tuple[bytes, str]:
    """PNG bytes and the alt text that goes beside them."""
    fig = figure.draw(artifact["data"], artifact.get("diagram"),
                      title=f"{artifact['lessonId']} ({artifact['provenance']})")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue(), alt_text(artifact)


def _value(y) -> str:
    return "not given" if y is None else f"{y:.3g}"


def alt_text(artifact: dict) -> str:
    lines = [f"{artifact['lessonId']}, {artifact['provenance']}, "
             f"jax {artifact['environment']['jax']} on {artifact['environment']['backend']}."]
    for panel in artifact["data"]["panels"]:
        axis = panel["labels"] if panel["kind"] == "bar" else panel["x"]
        scale = ", log scale" if panel.get("yscale") == "log" else ""
        for series in panel["series"]:
            samples = series.get("samples") or [[] for _ in axis]
            values = ", ".join(
                f"{' '.join(str(a).split())}: {_value(y)}"
                + (f" (samples {min(s):.3g} to {max(s):.3g}, {len(s)} of them)" if len(s) > 1 else "")
                for a, y, s in zip(axis, series["y"], samples))
            lines.append(f"{panel['kind'].capitalize()} chart '{panel['title']}', {series['label']} "
                         f"({panel['ylabel']}{scale}): {values}.")
    if artifact.get("diagram"):
        lines.append(f"Diagram '{artifact['diagram']['title']}': {artifact['diagram']['alt']}")
    return "\n".join(lines) + "\n"
