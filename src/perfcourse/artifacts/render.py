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
PANEL_KINDS = ("bar", "line", "spans")
DIAGRAM_KINDS = ("timeline", "flow")
YSCALES = ("linear", "log")
STYLES = ("both", "line", "points")
DIAGRAM_FIELDS = ("title", "prediction", "reading", "alt", "scope", "height", "panel")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_data(data, diagram, name: str) -> None:
    """Raise one CourseError naming what in `data` or `diagram` the figure cannot draw."""
    if not isinstance(data, dict) or data.get("kind") != "panels" or not isinstance(data.get("panels"), list):
        raise CourseError(f"{name}: data must be {{'kind': 'panels', 'panels': [...]}}")
    if "columns" in data and not (isinstance(data["columns"], int) and not isinstance(data["columns"], bool)
                                  and 1 <= data["columns"] <= figure.MAX_COLUMNS):
        raise CourseError(f"{name}: 'columns' must be a whole number from 1 to {figure.MAX_COLUMNS}")
    for i, panel in enumerate(data["panels"]):
        where = f"{name}: panel {i}"
        if not isinstance(panel, dict) or panel.get("kind") not in PANEL_KINDS:
            raise CourseError(f"{where}: kind must be one of {', '.join(PANEL_KINDS)}")
        where = f"{name}: panel {i} ({panel.get('title')!r})"
        if panel["kind"] == "spans":
            _check_spans(panel, where)
            continue
        for key in ("title", "ylabel", "series"):
            if key not in panel:
                raise CourseError(f"{where}: missing {key!r}")
        axis = panel["labels"] if panel["kind"] == "bar" else panel.get("x")
        if not isinstance(axis, list):
            raise CourseError(f"{where}: a {panel['kind']} panel needs "
                              + ("'labels'" if panel["kind"] == "bar" else "'x'"))
        for key in ("yscale", "xscale"):
            if panel.get(key, "linear") not in YSCALES:
                raise CourseError(f"{where}: {key!r} must be one of {', '.join(YSCALES)}, "
                                  f"not {panel[key]!r}")
        if "integer" in panel and not isinstance(panel["integer"], bool):
            raise CourseError(f"{where}: 'integer' must be true or false, not {panel['integer']!r}")
        if panel["kind"] == "bar" and any(key in panel for key in ("xscale", "marks", "ylim")):
            raise CourseError(f"{where}: 'xscale', 'marks' and 'ylim' belong to line panels")
        ylim = panel.get("ylim")
        if ylim is not None and not (isinstance(ylim, list) and len(ylim) == 2 and all(_number(v) for v in ylim)
                                     and ylim[0] < ylim[1]
                                     and (panel.get("yscale") != "log" or ylim[0] > 0)):
            raise CourseError(f"{where}: 'ylim' must be [low, high], low < high (and low > 0 on a log axis)")
        marks = panel.get("marks", [])
        if not isinstance(marks, list) or not all(isinstance(m, dict) and _number(m.get("x"))
                                                  and isinstance(m.get("label"), str) for m in marks):
            raise CourseError(f"{where}: 'marks' must be a list of {{'x': number, 'label': text}}")
        if not isinstance(panel["series"], list):
            raise CourseError(f"{where}: 'series' must be a list")
        log = panel.get("yscale") == "log"
        xlog = panel.get("xscale") == "log"
        if xlog and not all(_number(m["x"]) and m["x"] > 0 for m in marks):
            raise CourseError(f"{where}: a log x axis ('xscale': 'log') needs positive marks")
        for series in panel["series"]:
            own = series.get("x") if isinstance(series, dict) and panel["kind"] == "line" else None
            if own is not None and not (isinstance(own, list) and all(_number(v) for v in own)):
                raise CourseError(f"{where}: series {series.get('label')!r}: 'x' must be a list of numbers")
            points = own if own is not None else axis
            if not isinstance(series, dict) or not isinstance(series.get("label"), str) \
                    or not isinstance(series.get("y"), list) or len(series["y"]) != len(points):
                raise CourseError(f"{where}: each series needs a label and {len(points)} y values")
            if panel["kind"] == "bar" and any(key in series for key in ("x", "style", "names")):
                raise CourseError(f"{where}: series {series['label']!r}: 'x', 'style' and 'names' belong "
                                  "to line panels")
            if series.get("style", "both") not in STYLES:
                raise CourseError(f"{where}: series {series['label']!r}: 'style' must be one of "
                                  f"{', '.join(STYLES)}")
            names = series.get("names")
            if names is not None and (not isinstance(names, list) or len(names) != len(points)
                                      or not all(n is None or isinstance(n, str) for n in names)):
                raise CourseError(f"{where}: series {series['label']!r}: 'names' must hold one text "
                                  f"(or null) per point ({len(points)})")
            values = [y for y in series["y"] if y is not None]
            if not all(_number(y) for y in values):
                raise CourseError(f"{where}: series {series['label']!r}: y values must be numbers or null")
            if xlog and not all(_number(v) and v > 0 for v in points):
                raise CourseError(f"{where}: series {series['label']!r}: a log x axis ('xscale': 'log') "
                                  f"needs positive x values")
            if "samples" in series:
                samples = series["samples"]
                if not isinstance(samples, list) or len(samples) != len(points) or not all(
                        isinstance(s, list) and all(_number(v) for v in s) for s in samples):
                    raise CourseError(f"{where}: series {series['label']!r}: 'samples' must hold one list "
                                      f"of numbers per {'label' if panel['kind'] == 'bar' else 'x'} "
                                      f"({len(points)} lists)")
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


def _check_spans(panel: dict, where: str) -> None:
    for key in ("title", "lanes", "series"):
        if key not in panel:
            raise CourseError(f"{where}: missing {key!r}")
    lanes = panel["lanes"]
    if not isinstance(lanes, list) or not lanes or not all(isinstance(lane, str) for lane in lanes):
        raise CourseError(f"{where}: 'lanes' must be a list of names")
    if "xlim" in panel and not (isinstance(panel["xlim"], list) and len(panel["xlim"]) == 2
                                and all(_number(v) for v in panel["xlim"]) and panel["xlim"][0] < panel["xlim"][1]):
        raise CourseError(f"{where}: 'xlim' must be [low, high]")
    if not isinstance(panel["series"], list):
        raise CourseError(f"{where}: 'series' must be a list")
    for series in panel["series"]:
        if not isinstance(series, dict) or not isinstance(series.get("label"), str) or series.get("lane") not in lanes:
            raise CourseError(f"{where}: each series needs a label and a lane among {lanes}")
        spans = series.get("spans")
        if not isinstance(spans, list) or not all(
                isinstance(span, list) and len(span) == 2 and all(_number(v) for v in span) and span[0] <= span[1]
                for span in spans):
            raise CourseError(f"{where}: series {series['label']!r}: 'spans' must be a list of [start, end], "
                              "start <= end")


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
        if panel["kind"] == "spans":
            for series in panel["series"]:
                spans = series["spans"]
                extent = (f"from {min(a for a, _ in spans):.3g} to {max(b for _, b in spans):.3g}, "
                          f"{sum(b - a for a, b in spans):.3g} in all" if spans else "none")
                lines.append(f"Timeline '{panel['title']}' ({panel.get('xlabel', '')}), lane {series['lane']}, "
                             f"{series['label']}: {len(spans)} span(s), {extent}.")
            continue
        axis = panel["labels"] if panel["kind"] == "bar" else panel["x"]
        scale = ", log scale" if panel.get("yscale") == "log" else ""
        xscale = " (log scale)" if panel.get("xscale") == "log" else ""
        for series in panel["series"]:
            points = series.get("x", axis)
            samples = series.get("samples") or [[] for _ in points]
            names = series.get("names") or [None for _ in points]
            values = ", ".join(
                f"{' '.join(str(a).split()) if not isinstance(a, float) else f'{a:.3g}'}"
                + (f" ({n})" if n else "") + f": {_value(y)}"
                + (f" (samples {min(s):.3g} to {max(s):.3g}, {len(s)} of them)" if len(s) > 1 else "")
                for a, y, s, n in zip(points, series["y"], samples, names)
                if panel["kind"] == "bar" or y is not None or s)  # a line's missing points are not drawn
            xlabel = f" against {panel.get('xlabel')}{xscale}" if panel["kind"] == "line" and panel.get("xlabel") else ""
            lines.append(f"{panel['kind'].capitalize()} chart '{panel['title']}', {series['label']} "
                         f"({panel['ylabel']}{scale}{xlabel}): {values}.")
        for mark in panel.get("marks") or []:
            lines.append(f"Marked in '{panel['title']}': {mark['label']} at {mark['x']:.3g}.")
    if artifact.get("diagram"):
        lines.append(f"Diagram '{artifact['diagram']['title']}': {artifact['diagram']['alt']}")
    return "\n".join(lines) + "\n"
