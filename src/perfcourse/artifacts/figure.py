"""Drawing code for the lesson's figure: panels of measurements, then a diagram of the mechanism.

The same code draws the course's reference images, so the figure below is drawn the way the
recorded one is. It measures nothing and needs only matplotlib. You may read it, but you do not
have to: the lesson never asks about it.

draw(panels, diagram, title) returns a matplotlib figure.

panels is {"kind": "panels", "panels": [...]}, with "columns": n for n panels a row (default: up to
three). Each panel is a bar or line chart, or a timeline:
    {"kind": "bar", "title": ..., "ylabel": ..., "labels": [...], "series": [...]}
    {"kind": "line", "title": ..., "ylabel": ..., "xlabel": ..., "x": [...], "series": [...]}
    {"kind": "spans", "title": ..., "xlabel": ..., "lanes": [...], "series": [...]}
and each bar or line series is {"label": ..., "y": [one value per label or x]}. Optional:
    panel "yscale": "linear" (the default) or "log", for values many powers of ten apart;
    panel "xscale" (line panels): "linear" (the default) or "log";
    panel "integer": true for whole-number ticks (the default when every value is a whole number);
    panel "marks" (line panels): [{"x": ..., "label": ...}], each a dotted vertical line with its
        label (a ridge point, say);
    panel "ylim" (line panels): [low, high], the y range shown, where one outlier would flatten the
        rest: a point above it is drawn as a triangle at the top edge, its value written beside it;
    series "samples": one list of measured values per label or x, drawn as small dots beside
        the value they summarize (a median), so the spread of noisy timings shows;
    series "x" (line panels): the series' own x values, instead of the panel's;
    series "style" (line panels): "line" (no markers: a model, such as a roof or an ideal) or
        "points" (markers only: measurements that no line joins); both by default;
    series "names" (line panels): a short text per point, written beside it.
A line series equal to an earlier one is drawn thinner, on top of it, and its legend says so.
A spans panel is a timeline measured on one clock: one row per lane (top to bottom, as listed),
and each series {"label": ..., "lane": ..., "spans": [[start, end], ...]} a colour of bars in its
lane (series "colour" picks it; a series with no spans is left out of the legend); panel "xlim":
[low, high] fixes the time axis (so two panels share a scale).
diagram is None or {"title": ..., "prediction": ..., "height": inches, "panel": ...}, where the
panel is {"kind": "timeline"} or {"kind": "flow", "steps": [...], "notes": [one per step]};
a flow diagram takes the height its notes need.
"""
import math
import textwrap

import matplotlib.pyplot as plt
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.text import Text
from matplotlib.textpath import TextToPath
from matplotlib.ticker import MaxNLocator, NullLocator
from matplotlib.transforms import offset_copy

FONT = 10  # points: every text in the figure is at least SMALL at the size it is drawn
SMALL = 9
TITLE = 11
LINE = 1.25  # line height, in multiples of the font size
BOX = 0.9  # inches: the least height of a diagram's boxes
MAX_COLUMNS = 3  # panels per row; more wrap onto further rows
COLUMN_WIDTH = 4.0  # inches per panel column
AXES_WIDTH = COLUMN_WIDTH - 0.9  # inches: a panel's axes, its y tick labels and y label set aside
PANEL_HEIGHT = 3.4  # inches per row of panels
# Series of a line panel, in order: each later one thinner, with another marker and dash, so a
# series equal to an earlier one is still seen on top of it.
LINE_STYLES = [("o", "-", 8.0, 2.6), ("s", "--", 6.0, 1.8), ("^", ":", 4.5, 1.4),
               ("D", "-.", 3.5, 1.1), ("v", "-", 3.0, 0.9)]


def draw(data, diagram=None, title=""):
    """The figure: the panels in a grid (up to three a row, or data["columns"]), then the diagram
    across the width."""
    panels = data["panels"]
    columns = data.get("columns") or min(max(len(panels), 2), MAX_COLUMNS)
    rows = -(-len(panels) // columns)
    width = COLUMN_WIDTH * columns
    heights = [PANEL_HEIGHT] * rows
    if diagram:
        heading = f"{diagram['title']}\n" + _wrap(f"Predict first: {diagram['prediction']}", width - 1.0, FONT)
        heading_inches = (heading.count("\n") + 1) * LINE * FONT / 72 + 0.3
        heights.append(heading_inches + _diagram_inches(diagram, width))
    fig = plt.figure(figsize=(width, sum(heights) + 0.4), layout="constrained", facecolor="white")
    grid = fig.add_gridspec(len(heights), columns, height_ratios=heights)
    named = [_draw_panel(fig.add_subplot(grid[i // columns, i % columns]), panel) for i, panel in enumerate(panels)]
    if diagram:
        ax = fig.add_subplot(grid[-1, :])
        if diagram["panel"]["kind"] == "flow":
            _draw_flow(ax, diagram["panel"], width, heights[-1] - heading_inches)
        else:
            _draw_timeline(ax)
        ax.set_title(heading, fontsize=FONT)
    if title:
        fig.suptitle(title, fontsize=TITLE)
    fig.draw_without_rendering()  # the final layout first: names are placed on the axes as drawn
    for name_points in named:
        name_points()
    fig.set_layout_engine("none")  # kept as laid out (names stay inside their axes): no second layout
    return fig


_TEXT = TextToPath()


def _points(text, size):
    """Width in points of the widest line of `text` at `size` points, in the figure's font."""
    return max((_TEXT.get_text_width_height_descent(line, FontProperties(size=size), ismath=False)[0]
                for line in str(text).split("\n") if line), default=0.0)


def _wrap(text, inches, size):
    """Text broken into lines (at spaces and hyphens) that measure at most `inches` at `size`
    points: the longest lines that fit; a word longer than that is kept whole, one line of its own."""
    lines, wrapped = str(text).split("\n"), str(text)
    for chars in range(max(len(line) for line in lines), 0, -1):
        wrapped = "\n".join(textwrap.fill(line, chars, break_long_words=False) if line else line for line in lines)
        if _points(wrapped, size) <= inches * 72:
            return wrapped
    return wrapped


def _numbers(panel):
    values = [y for series in panel["series"] for y in series["y"] if y is not None]
    for series in panel["series"]:
        values += [v for sample in series.get("samples") or [] for v in sample if v is not None]
    return values


def _whole(value):
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _draw_panel(ax, panel):
    """Draws the panel; returns what writes its points' names, once the figure's layout is done."""
    if panel["kind"] == "spans":
        _draw_spans(ax, panel)
        return lambda: None
    log = panel.get("yscale", "linear") == "log"
    values = _numbers(panel)
    integer = panel.get("integer")
    if integer is None:  # whole numbers only, none written as a float: counts
        integer = bool(values) and all(isinstance(v, int) for v in values)
    if log:
        ax.set_yscale("log")
    named, markers = [], []
    if panel["kind"] == "bar":  # counts (small whole numbers) are written above their bars
        handles = _draw_bars(ax, panel, label_values=bool(integer and not log and values and max(values) < 1000))
    else:
        handles, named, markers = _draw_lines(ax, panel)
    ax.set_title(_wrap(panel["title"], AXES_WIDTH, TITLE), fontsize=TITLE)
    ax.set_ylabel(panel["ylabel"], fontsize=FONT)
    ax.tick_params(which="both", labelsize=FONT)
    ax.yaxis.get_offset_text().set_fontsize(FONT)
    ax.xaxis.get_offset_text().set_fontsize(FONT)
    if integer and not log:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    columns = _legend_columns(handles)
    if values:
        _set_limits(ax, values, log, -(-len(handles) // columns), panel.get("ylim"))
    # With a y range of its own a panel keeps no room above its data: the legend goes where it covers least.
    ax.legend(handles=handles or None, fontsize=SMALL, loc="best" if panel.get("ylim") else "upper left",
              ncol=columns)
    return lambda: _name_points(ax, named, markers)


def _legend_columns(handles) -> int:
    """Two legend columns where the labels fit side by side within the axes (fewer rows, so less
    room above the data), else one."""
    labels = [handle.get_label() for handle in handles]
    if len(labels) < 3:
        return 1
    rows = -(-len(labels) // 2)  # matplotlib fills the first column first
    # Each column: its widest label and a handle with its padding (2.8 em); between the columns
    # 2 em; the frame's padding about 2 em.
    points = sum(max(_points(label, SMALL) for label in column) + 2.8 * SMALL
                 for column in (labels[:rows], labels[rows:])) + 4 * SMALL
    return 2 if points <= AXES_WIDTH * 72 else 1


# Where a point's name may go, in points from the point (x, y, horizontal alignment), in order.
# Beside the point first; then, where a crowd of points leaves no room there, further out in eight
# directions, the name joined to its point by a thin leader line.
NAME_PLACES = [(5, 3, "left"), (5, -12, "left"), (-5, 3, "right"), (-5, -12, "right"), (5, 13, "left"),
               (5, -22, "left"), (-5, 13, "right"), (-5, -22, "right")] + [
    (round(dx * reach), round(dy * reach) - (5 if dy < 0 else 0 if dy > 0 else 4),
     "left" if dx > 0 else "right" if dx < 0 else "center")
    for reach in (30, 45, 60, 80) for dx, dy in ((1, 0.5), (-1, 0.5), (1, -0.5), (-1, -0.5), (0, 1), (0, -1),
                                             (1, 0), (-1, 0))]
LEADER_BEYOND = 24  # points: a name placed further from its point than this gets a leader line


def _name_points(ax, named, markers=()):
    """Each point's name beside it, in the first place (NAME_PLACES) inside the axes where it
    overlaps nothing: no text already written (other names, the marks' labels), not the legend,
    no plotted point or line. Where every place overlaps something, the place inside the axes
    clear of every text and the legend that covers the least of the points and lines. Placed on
    the axes as finally laid out, so what is measured here is what is drawn."""
    renderer = ax.figure.canvas.get_renderer()
    scale = ax.figure.dpi / 72  # display units per point
    texts, marks = [], []  # what a name must never cover; what it should not
    for text in ax.texts:  # the marks' labels and the values written off the scale, as drawn
        box = Text.get_window_extent(text, renderer)  # the text alone, without an annotation's arrow
        texts.append((box.x0, box.y0, box.x1, box.y1))
    if named and ax.get_legend() is not None:
        box = ax.get_legend().get_window_extent(renderer)
        texts.append((box.x0, box.y0, box.x1, box.y1))
    for at, y, size in markers:  # a marker `size` points across, centred on its point
        px, py = ax.transData.transform((at, y))
        half = size / 2 * scale
        marks.append((px - half, py - half, px + half, py + half))
    for line in ax.get_lines() if named else ():  # roofs, ideals, marks: a small box every few points
        if line.get_linestyle() in ("None", "none", "", " "):
            continue
        path = line.get_transform().transform(line.get_xydata())
        for (ax0, ay0), (ax1, ay1) in zip(path, path[1:]):
            marks += _along(ax0, ay0, ax1, ay1, scale)
    (x0, y0), (x1, y1) = ax.transAxes.transform((0, 0)), ax.transAxes.transform((1, 1))

    def covered(box, boxes):
        return sum(max(0, min(box[2], b[2]) - max(box[0], b[0])) * max(0, min(box[3], b[3]) - max(box[1], b[1]))
                   for b in boxes)

    for at, y, name in sorted(named, key=lambda item: (item[0], item[1])):
        px, py = ax.transData.transform((at, y))
        width, height = _points(name, SMALL) * scale, SMALL * 1.1 * scale

        def cost(place):
            """(text covered or outside the axes, points and lines covered): the less the better."""
            dx, dy, align = place
            left = px + dx * scale - {"left": 0, "center": width / 2, "right": width}[align]
            box = (left, py + (dy - 0.25 * SMALL) * scale, left + width, py + dy * scale + height)
            inside = max(0, min(box[2], x1) - max(box[0], x0)) * max(0, min(box[3], y1) - max(box[1], y0))
            return (box[2] - box[0]) * (box[3] - box[1]) - inside + covered(box, texts), covered(box, marks)

        dx, dy, align = next((place for place in NAME_PLACES if cost(place) == (0, 0)),
                             min(NAME_PLACES, key=cost))
        leader = ({"arrowprops": {"arrowstyle": "-", "color": "0.45", "linewidth": 0.6, "shrinkA": 1, "shrinkB": 3}}
                  if math.hypot(dx, dy) > LEADER_BEYOND else {})
        written = ax.annotate(name, (at, y), xytext=(dx, dy), textcoords="offset points", fontsize=SMALL,
                              ha=align, zorder=10, **leader)
        written.update_positions(renderer)  # its offset applied, as a draw would
        box = Text.get_window_extent(written, renderer)  # as drawn, its descent included, its leader not
        texts.append((box.x0, box.y0, box.x1, box.y1))
        if leader:  # the leader line, from the middle of the name to the point
            marks += _along((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, px, py, scale)


def _along(x0, y0, x1, y1, scale):
    """Small boxes every 3 points along a line segment (display units): the room a line takes."""
    if not math.isfinite(x0 + y0 + x1 + y1):
        return []
    steps = max(1, int(math.hypot(x1 - x0, y1 - y0) / (3 * scale)))
    return [(x0 + (x1 - x0) * k / steps - scale, y0 + (y1 - y0) * k / steps - scale,
             x0 + (x1 - x0) * k / steps + scale, y0 + (y1 - y0) * k / steps + scale) for k in range(steps + 1)]


def _set_limits(ax, values, log, rows, ylim=None):
    """Room above the data for the legend (upper left, `rows` lines), so it never covers it; or
    the panel's own y range, where it gives one."""
    if ylim:
        ax.set_ylim(*ylim)
        return
    # The legend's height (its rows, its frame, a name written above the highest point) over the
    # axes' (about 2.4 inches), both in points.
    room = (rows * 1.5 * SMALL + 24) / (2.4 * 72)
    if log:
        low, high = min(v for v in values if v > 0), max(values)
        bottom = 10 ** math.floor(math.log10(low) - 0.05)
        span = math.log10(high) - math.log10(bottom)
        ax.set_ylim(bottom, 10 ** (math.log10(high) + span * room / (1 - room)))
    elif min(values) >= 0:
        ax.set_ylim(0, max(values) / (1 - room) or 1)


def _draw_bars(ax, panel, label_values):
    labels, count = panel["labels"], len(panel["series"])
    width = 0.8 / count
    handles, sampled = [], False
    for j, series in enumerate(panel["series"]):
        offsets = [i + (j - (count - 1) / 2) * width for i in range(len(labels))]
        heights = [0 if y is None else y for y in series["y"]]
        bars = ax.bar(offsets, heights, width=width, label=series["label"], zorder=2)
        handles.append(bars)
        if label_values:
            ax.bar_label(bars, fontsize=SMALL, padding=2)
        for centre, sample in zip(offsets, series.get("samples") or []):
            sample = [v for v in sample if v is not None]
            if sample:
                sampled = True
                spread = [centre + width * 0.6 * (k / max(len(sample) - 1, 1) - 0.5) for k in range(len(sample))]
                ax.plot(spread, sample, linestyle="none", marker="o", markersize=3.5, color="black",
                        alpha=0.8, zorder=3)
    if len(labels) > 5:  # many labels: slanted, so that neighbours do not run into each other
        ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right", rotation_mode="anchor")
    else:
        ax.set_xticks(range(len(labels)), [_wrap(label, AXES_WIDTH / max(len(labels), 1) - 0.1, FONT)
                                           for label in labels])
    if sampled:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=3.5, color="black",
                              label="dots: each sample"))
    return handles


def _draw_lines(ax, panel):
    if panel.get("xscale", "linear") == "log":
        ax.set_xscale("log")
    handles, sampled, drawn, every_x, named, markers = [], False, [], [], [], []
    count = len(panel["series"])
    for j, series in enumerate(panel["series"]):
        marker, dash, size, width = LINE_STYLES[j % len(LINE_STYLES)]
        style = series.get("style", "both")
        if style == "line":
            marker = None
        elif style == "points":
            dash, size = "none", size + 1
        x = series.get("x", panel.get("x"))
        every_x += [v for v in x if isinstance(v, (int, float))]
        label = series["label"]
        same = [earlier["label"] for earlier in drawn
                if earlier["y"] == series["y"] and earlier.get("x", panel.get("x")) == x]
        if same:
            label = f"{label} (same as {same[0]})"
        drawn.append(series)
        ys = [math.nan if y is None else y for y in series["y"]]
        (line,) = ax.plot(x, ys, marker=marker, linestyle=dash, markersize=size, linewidth=width,
                          label=label, zorder=2 + j)
        handles.append(line)
        if marker:
            markers += [(at, y, size) for at, y in zip(x, series["y"])
                        if isinstance(at, (int, float)) and isinstance(y, (int, float)) and math.isfinite(y)]
        named += [(at, y, name) for at, y, name in zip(x, series["y"], series.get("names") or [])
                  if name and y is not None]
        top = (panel.get("ylim") or [None, None])[1]
        above = [(at, y) for at, y in zip(x, series["y"]) if top is not None and y is not None and y > top]
        for at, y in above:  # off the panel's scale: a triangle at the edge, and the value beside it
            ax.plot([at], [top], marker="^", markersize=size + 1, color=line.get_color(), clip_on=False,
                    zorder=5)
            ax.annotate(f"{y:.3g} (off the scale)", (at, top), xytext=(8, -12), textcoords="offset points",
                        fontsize=SMALL, ha="left", zorder=10)
        for at, sample in zip(x, series.get("samples") or []):
            sample = [v for v in sample if v is not None]
            for k, value in enumerate(sample):
                sampled = True
                shift = (j - (count - 1) / 2) * 7 + 8 * (k / max(len(sample) - 1, 1) - 0.5)
                ax.plot([at], [value], linestyle="none", marker="o", markersize=3, alpha=0.6,
                        markeredgewidth=0, color=line.get_color(), zorder=1.5,
                        transform=offset_copy(ax.transData, fig=ax.figure, x=shift, units="points"))
    for mark in panel.get("marks") or []:
        ax.axvline(mark["x"], color="0.3", linestyle=":", linewidth=1.2, zorder=1)
        ax.annotate(mark["label"], (mark["x"], 0.02), xycoords=("data", "axes fraction"), xytext=(3, 0),
                    textcoords="offset points", fontsize=SMALL, rotation=90, va="bottom", color="0.2")
    ax.set_xlabel(panel.get("xlabel", ""), fontsize=FONT)
    numeric = sorted(set(every_x))
    if numeric and all(_whole(v) for v in numeric):
        gaps = [b - a for a, b in zip(numeric, numeric[1:])]
        span = max(numeric) - min(numeric)
        if len(numeric) <= 12 and span and (ax.get_xscale() == "log" or min(gaps) >= 0.05 * span):
            ax.set_xticks(numeric, [f"{v:g}" for v in numeric])
            ax.xaxis.set_minor_locator(NullLocator())
        elif ax.get_xscale() != "log":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if sampled:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=3.5, color="0.4",
                              label="dots: each sample"))
    return handles, named, markers


SPAN_COLOURS = ["#4c72b0", "#c44e52", "#dd8452", "#55a868", "#8172b3", "#937860"]


def _draw_spans(ax, panel):
    """One row per lane, top to bottom; each series' spans as bars of one colour in its lane."""
    lanes = panel["lanes"]
    row = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    handles = []
    for j, series in enumerate(panel["series"]):
        colour = series.get("colour") or SPAN_COLOURS[j % len(SPAN_COLOURS)]
        bars = [(start, max(end - start, 0.0)) for start, end in series["spans"]]
        if not bars:  # nothing of it in this panel: no entry in its legend either
            continue
        ax.broken_barh(bars, (row[series["lane"]] - 0.32, 0.64), facecolors=colour, edgecolor="black",
                       linewidth=0.4, zorder=2)
        handles.append(Rectangle((0, 0), 1, 1, facecolor=colour, edgecolor="black", linewidth=0.4,
                                 label=series["label"]))
    ax.set_yticks(list(row.values()), [_wrap(lane, 1.0, FONT) for lane in row])
    ax.set_ylim(-0.6, len(lanes) - 0.3 + 0.42 * len(handles))  # room above the lanes for the legend
    if panel.get("xlim"):
        ax.set_xlim(*panel["xlim"])
    ax.set_title(_wrap(panel["title"], AXES_WIDTH, TITLE), fontsize=TITLE)
    ax.set_xlabel(panel.get("xlabel", ""), fontsize=FONT)
    ax.tick_params(which="both", labelsize=FONT)
    ax.xaxis.get_offset_text().set_fontsize(FONT)
    ax.grid(axis="x", color="0.85", linewidth=0.6, zorder=0)
    ax.legend(handles=handles, fontsize=SMALL, loc="upper left")


def _flow_notes(panel, width):
    """Each step's note, each line wrapped to the room one step has."""
    steps = panel["steps"]
    step_inches = width * 2.0 / (len(steps) * 2.0 + 0.1)
    notes = panel.get("notes") or [""] * len(steps)
    return [_wrap(note, step_inches - 0.1, FONT) for note in notes]


def _note_inches(notes):
    lines = max([note.count("\n") + 1 for note in notes if note] or [0])
    return lines * LINE * FONT / 72


def _diagram_inches(diagram, width):
    """Inches the diagram needs below its heading: the lanes (the diagram's height, at least 2.2),
    or the boxes and the longest note of a flow."""
    if diagram["panel"].get("kind") != "flow":
        return max(float(diagram.get("height", 3.0)) - 0.8, 2.2)
    return BOX + 0.3 + _note_inches(_flow_notes(diagram["panel"], width))


def _draw_timeline(ax):
    """Host, device and measurement lanes of one synchronized call; lengths show order only."""
    lanes = {"host": 2, "device": 1, "measurement": 0}
    blocks = [
        ("host", 0.0, 1.0, "dispatch", "#4c72b0", "white"),
        ("host", 1.0, 4.0, "wait (block_until_ready)", "#c4d3ea", "black"),
        ("device", 1.0, 4.0, "compute", "#dd8452", "black"),
        ("measurement", 0.0, 5.0, "clock read ... clock read after ready", "#55a868", "black"),
    ]
    for lane, start, length, label, colour, ink in blocks:
        y = lanes[lane]
        ax.add_patch(Rectangle((start, y - 0.3), length, 0.6, facecolor=colour, edgecolor="black"))
        ax.text(start + length / 2, y, label, ha="center", va="center", fontsize=FONT, color=ink)
    ax.add_patch(FancyArrowPatch((5.0, 1.0), (5.0, 0.35), arrowstyle="->", mutation_scale=12))
    ax.text(5.1, 0.7, "ready", fontsize=FONT, va="center")
    ax.set_yticks(list(lanes.values()), list(lanes))
    ax.tick_params(labelsize=FONT)
    ax.set_xlim(-0.2, 6.2)
    ax.set_ylim(-0.6, 2.6)
    ax.set_xticks([])
    ax.set_xlabel("order of events (not measured durations)", fontsize=FONT)


def _draw_flow(ax, panel, width, inches):
    """Boxes left to right joined by arrows: the stages a program passes through, in order.

    A box is one unit high; `inches` is the height of the axes, so the notes below the boxes get
    the room their lines take at FONT points.
    """
    steps, notes = panel["steps"], _flow_notes(panel, width)
    below = _note_inches(notes) / max(inches - 0.25, 0.5)  # the notes' share of the height
    bottom = (-0.25 - 1.2 * below) / (1 - below) if below < 0.9 else -4.0
    for i, (step, note) in enumerate(zip(steps, notes)):
        ax.add_patch(Rectangle((i * 2.0, 0.0), 1.5, 1.0, facecolor="#c4d3ea", edgecolor="black"))
        ax.text(i * 2.0 + 0.75, 0.5, _wrap(step, width / len(steps) * 0.62, FONT), ha="center",
                va="center", fontsize=FONT)
        if note:
            ax.text(i * 2.0 + 0.75, -0.15, note, ha="center", va="top", fontsize=FONT)
        if i:
            ax.add_patch(FancyArrowPatch((i * 2.0 - 0.5, 0.5), (i * 2.0, 0.5),
                                         arrowstyle="->", mutation_scale=12))
    ax.set_xlim(-0.3, len(steps) * 2.0 - 0.2)
    ax.set_ylim(bottom, 1.2)
    ax.axis("off")
