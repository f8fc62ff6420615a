"""Draw an artifact's panels and diagram to one PNG with matplotlib, and write its alt text.

Same artifact, same matplotlib: same bytes (no timestamps in the PNG), so a check can redraw
an artifact and compare. The hash of this file is the artifacts' rendererHash.
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

from ..course import CourseError  # noqa: E402

PANEL_KINDS = ("bar", "line")
DIAGRAM_KINDS = ("timeline", "flow")
MAX_COLUMNS = 3  # panels per row; more wrap onto further rows
DIAGRAM_FIELDS = ("title", "prediction", "reading", "alt", "scope", "height", "panel")


def check_data(data, diagram, name: str) -> None:
    """Raise one CourseError naming what in `data` or `diagram` this renderer cannot draw."""
    if not isinstance(data, dict) or data.get("kind") != "panels" or not isinstance(data.get("panels"), list):
        raise CourseError(f"{name}: data must be {{'kind': 'panels', 'panels': [...]}}")
    for i, panel in enumerate(data["panels"]):
        where = f"{name}: panel {i}"
        if not isinstance(panel, dict) or panel.get("kind") not in PANEL_KINDS:
            raise CourseError(f"{where}: kind must be one of {', '.join(PANEL_KINDS)}")
        for key in ("title", "ylabel", "series"):
            if key not in panel:
                raise CourseError(f"{where}: missing {key!r}")
        axis = panel["labels"] if panel["kind"] == "bar" else panel.get("x")
        if not isinstance(axis, list):
            raise CourseError(f"{where}: a {panel['kind']} panel needs "
                              + ("'labels'" if panel["kind"] == "bar" else "'x'"))
        for series in panel["series"]:
            if not isinstance(series, dict) or len(series.get("y", ())) != len(axis):
                raise CourseError(f"{where}: each series needs a label and {len(axis)} y values")
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
            if not isinstance(notes, list) or len(notes) not in (0, len(steps)):
                raise CourseError(f"{name}: a flow diagram's 'notes' has one label per step")


def _draw_panel(ax, panel: dict) -> None:
    if panel["kind"] == "bar":
        count = len(panel["series"])
        width = 0.8 / count
        for j, series in enumerate(panel["series"]):
            offsets = [i + (j - (count - 1) / 2) * width for i in range(len(panel["labels"]))]
            ax.bar(offsets, series["y"], width=width, label=series["label"])
        ax.set_xticks(range(len(panel["labels"])), panel["labels"])
    else:
        for series in panel["series"]:
            ax.plot(panel["x"], series["y"], marker="o", label=series["label"])
        ax.set_xlabel(panel.get("xlabel", ""))
    ax.set_title(panel["title"])
    ax.set_ylabel(panel["ylabel"])
    values = [y for series in panel["series"] for y in series["y"] if y is not None]
    if values and min(values) >= 0:
        ax.set_ylim(0, max(values) * 1.3 or 1)  # headroom, so the legend never covers the data
    ax.legend(fontsize="small", loc="upper left")


def _draw_timeline(ax) -> None:
    """Host, device and measurement lanes of one synchronized call; lengths show order only."""
    lanes = {"host": 2, "device": 1, "measurement": 0}
    blocks = [
        ("host", 0.0, 1.0, "dispatch", "#4c72b0"),
        ("host", 1.0, 4.0, "wait (block_until_ready)", "#c4d3ea"),
        ("device", 1.0, 4.0, "compute", "#dd8452"),
        ("measurement", 0.0, 5.0, "clock read ... clock read after ready", "#55a868"),
    ]
    for lane, start, length, label, colour in blocks:
        y = lanes[lane]
        ax.add_patch(Rectangle((start, y - 0.3), length, 0.6, facecolor=colour, edgecolor="black"))
        ax.text(start + length / 2, y, label, ha="center", va="center", fontsize=8)
    ax.add_patch(FancyArrowPatch((5.0, 1.0), (5.0, 0.35), arrowstyle="->", mutation_scale=10))
    ax.text(5.1, 0.7, "ready", fontsize=8, va="center")
    ax.set_yticks(list(lanes.values()), list(lanes))
    ax.set_xlim(-0.2, 6.2)
    ax.set_ylim(-0.6, 2.6)
    ax.set_xticks([])
    ax.set_xlabel("order of events (not measured durations)")


def _draw_flow(ax, panel: dict) -> None:
    """Boxes left to right joined by arrows: the stages a program passes through, in order."""
    steps, notes = panel["steps"], panel.get("notes") or [""] * len(panel["steps"])
    for i, (step, note) in enumerate(zip(steps, notes)):
        ax.add_patch(Rectangle((i * 2.0, 0.0), 1.5, 1.0, facecolor="#c4d3ea", edgecolor="black"))
        ax.text(i * 2.0 + 0.75, 0.5, step, ha="center", va="center", fontsize=9)
        if note:
            ax.text(i * 2.0 + 0.75, -0.25, note, ha="center", va="top", fontsize=7, wrap=True)
        if i:
            ax.add_patch(FancyArrowPatch((i * 2.0 - 0.5, 0.5), (i * 2.0, 0.5),
                                         arrowstyle="->", mutation_scale=12))
    ax.set_xlim(-0.3, len(steps) * 2.0 - 0.2)
    ax.set_ylim(-1.0, 1.3)
    ax.axis("off")


def draw(artifact: dict) -> tuple[bytes, str]:
    """PNG bytes and the alt text that goes beside them."""
    panels = artifact["data"]["panels"]
    diagram = artifact.get("diagram")
    columns = min(max(len(panels), 2), MAX_COLUMNS)
    panel_rows = -(-len(panels) // columns)
    heights = [3.2] * panel_rows + ([float(diagram["height"])] if diagram else [])
    fig = plt.figure(figsize=(4.6 * columns, sum(heights)))
    grid = fig.add_gridspec(len(heights), columns, height_ratios=heights)
    for i, panel in enumerate(panels):
        _draw_panel(fig.add_subplot(grid[i // columns, i % columns]), panel)
    if diagram:
        ax = fig.add_subplot(grid[-1, :])
        if diagram["panel"]["kind"] == "flow":
            _draw_flow(ax, diagram["panel"])
        else:
            _draw_timeline(ax)
        ax.set_title(f"{diagram['title']}\nPredict first: {diagram['prediction']}", fontsize=10)
    fig.suptitle(f"{artifact['lessonId']} ({artifact['provenance']})", fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue(), alt_text(artifact)


def alt_text(artifact: dict) -> str:
    lines = [f"{artifact['lessonId']}, {artifact['provenance']}, "
             f"jax {artifact['environment']['jax']} on {artifact['environment']['backend']}."]
    for panel in artifact["data"]["panels"]:
        axis = panel["labels"] if panel["kind"] == "bar" else panel["x"]
        for series in panel["series"]:
            values = ", ".join(f"{' '.join(str(a).split())}: {y:.3g}" for a, y in zip(axis, series["y"]))
            lines.append(f"{panel['kind'].capitalize()} chart '{panel['title']}', {series['label']} "
                         f"({panel['ylabel']}): {values}.")
    if artifact.get("diagram"):
        lines.append(f"Diagram '{artifact['diagram']['title']}': {artifact['diagram']['alt']}")
    return "\n".join(lines) + "\n"
