"""The lessons' figures: one drawing module (figure.py), its copy in every notebook, what it draws.

Fast: no kernel. figure.draw is called directly on small panels and on the committed artifacts.
"""
import ast
import hashlib
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

from conftest import ROOT, perfcourse

from perfcourse.artifacts import execute, figure, notebook_figure, record, render
from perfcourse.course import FIGURE_TAG, CourseError, lessons, read_notebook
from perfcourse.release import released

MIME = execute.ARTIFACT_MIME
FIGURE_PY = ROOT / "src" / "perfcourse" / "artifacts" / "figure.py"


def committed(lesson):
    return json.loads((ROOT / "artifacts" / "cpu" / f"{lesson}.json").read_text())


def bar(**extra):
    panel = {"kind": "bar", "title": "Counts", "ylabel": "count", "labels": ["a", "b", "c"],
             "series": [{"label": "traces", "y": [1, 2, 3]}]}
    return {**panel, **extra}


def line(series, **extra):
    return {"kind": "line", "title": "So far", "ylabel": "count", "xlabel": "call", "x": [1, 2, 3, 4],
            **extra, "series": series}


def panels(*items):
    return {"kind": "panels", "panels": list(items)}


@pytest.fixture
def drawn():
    figures = []

    def draw(data, diagram=None, title="t"):
        fig = figure.draw(data, diagram, title=title)
        fig.canvas.draw()  # ticks and layout exist only once drawn
        figures.append(fig)
        return fig

    yield draw
    for fig in figures:
        plt.close(fig)


def texts(fig):
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


# --- figure.py is the one home, and runs where the notebooks run -------------------------------

def test_figure_py_imports_only_the_standard_library_and_matplotlib():
    tree = ast.parse(FIGURE_PY.read_text())
    imported = {(node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert imported <= {"math", "textwrap", "matplotlib"}, imported
    assert "__future__" not in FIGURE_PY.read_text()  # a notebook cell may not start with one


def test_renderer_hash_covers_render_py_then_figure_py():
    render_py = ROOT / "src" / "perfcourse" / "artifacts" / "render.py"
    assert record.renderer_hash() == hashlib.sha256(render_py.read_bytes() + FIGURE_PY.read_bytes()).hexdigest()


@pytest.mark.parametrize("lesson", lessons(ROOT))
def test_every_notebook_holds_figure_py_before_its_drawing_cell(lesson):
    code = FIGURE_PY.read_text()
    for path in (ROOT / "source" / lesson / f"{lesson}.ipynb", released(ROOT, lesson)):
        nb = read_notebook(path)
        cell = notebook_figure.figure_cell(nb, str(path))
        assert cell.source == code, f"{path}: run 'perfcourse figures' (then 'perfcourse release')"
        assert FIGURE_TAG in cell.metadata["tags"] and cell.metadata["jupyter"] == {"source_hidden": True}
        assert {k: cell.metadata["nbgrader"][k] for k in ("grade", "solution", "locked", "grade_id")} == {
            "grade": False, "solution": False, "locked": True, "grade_id": "figure_code"}
        at = nb.cells.index(cell)
        assert nb.cells[at - 1].cell_type == "markdown" and "drawing code" in nb.cells[at - 1].source
        drawing = nb.cells[at + 1]
        assert FIGURE_TAG in drawing.metadata.get("tags", []) and MIME in drawing.source
        assert "= draw(panels" in drawing.source and "plt.show()" in drawing.source
        assert "plt.subplots" not in drawing.source  # no second, ad-hoc plot


@pytest.mark.parametrize("lesson", lessons(ROOT))
def test_figure_cells_compute_nothing_a_later_cell_uses(lesson):
    """Grading skips figure cells: no name they bind may be read by a later non-figure code cell."""
    nb = read_notebook(ROOT / "source" / lesson / f"{lesson}.ipynb")
    bound, figures_seen = set(), False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        if FIGURE_TAG in cell.metadata.get("tags", []):
            figures_seen = True
            bound |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                      and isinstance(node.ctx, ast.Store)}
            bound |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            continue
        read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
        assert not read & bound, f"{lesson}: a later cell reads {sorted(read & bound)} from a figure cell"
    assert figures_seen


@pytest.mark.slow
def test_figures_check_is_clean_and_names_a_stale_notebook(course):
    proc = perfcourse("figures", "--check", cwd=ROOT)
    assert proc.returncode == 0 and "figures: up to date" in proc.stdout, proc.stdout + proc.stderr
    path = course / "source" / "performance-02" / "performance-02.ipynb"
    nb = json.loads(path.read_text())
    [cell] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "figure_code"]
    cell["source"] = ["# an older copy\n"]
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    # The same functions the command calls, in-process (the command itself ran above).
    problems = notebook_figure.stale(course)
    assert len(problems) == 1 and problems[0].startswith(
        "source/performance-02/performance-02.ipynb: its figure_code cell differs"), problems
    assert notebook_figure.sync(course) == [path]
    assert notebook_figure.stale(course) == []
    assert read_notebook(path).cells[0].source == read_notebook(ROOT / "source" / "performance-02"
                                                                 / "performance-02.ipynb").cells[0].source


def test_the_figure_code_cell_is_outside_the_content_hash():
    """New drawing code is a redraw (rendererHash), not a reason to execute the lessons again."""
    nb = read_notebook(ROOT / "source" / "performance-01" / "performance-01.ipynb")
    before = record.content_hash(nb)
    notebook_figure.figure_cell(nb, "nb").source += "\n# changed\n"
    assert record.content_hash(nb) == before


def test_execute_collects_only_the_figure_cells_images():
    import base64

    import nbformat

    nb = nbformat.v4.new_notebook()
    png = b"\x89PNG fake"
    image = nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(png).decode()})
    other = nbformat.v4.new_code_cell("plot()", outputs=[image])
    drawing = nbformat.v4.new_code_cell("draw()", outputs=[image], metadata={"tags": [FIGURE_TAG]})
    nb.cells = [other]
    assert execute.figure_images(nb) == []
    nb.cells.append(drawing)
    assert execute.figure_images(nb) == [png]


# --- what the figure draws ---------------------------------------------------------------------

def test_integer_panels_get_whole_ticks(drawn):
    fig = drawn(panels(bar(integer=True), line([{"label": "traces", "y": [1, 1, 2, 3]}], integer=True)))
    for ax in fig.axes:
        ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    fig.axes[1].get_xticks()
    assert all(float(t).is_integer() for t in fig.axes[1].get_xticks())


def test_counts_default_to_whole_ticks_and_floats_do_not(drawn):
    counts = drawn(panels(bar()))
    assert all(float(t).is_integer() for t in counts.axes[0].get_yticks())
    seconds = drawn(panels(bar(series=[{"label": "time", "y": [0.1, 0.2, 0.3]}])))
    assert not all(float(t).is_integer() for t in seconds.axes[0].get_yticks())


def test_log_panels_use_a_log_axis_and_show_both_ends(drawn):
    fig = drawn(panels(bar(yscale="log", series=[{"label": "s", "y": [0.03, 5e-5, 1e-4]}]),
                       line([{"label": "unrolled", "y": [48, 96, 192, 384]}, {"label": "scanned", "y": [4] * 4}],
                            yscale="log")))
    for ax in fig.axes:
        assert ax.get_yscale() == "log"
        low, high = ax.get_ylim()
        assert low < 4 * 1e-5 if ax is fig.axes[0] else low <= 4
        assert high > 384 if ax is fig.axes[1] else high > 0.03


def test_identical_series_stay_visible_and_the_legend_says_so(drawn):
    same = [1, 1, 2, 3]
    fig = drawn(panels(line([{"label": "traces", "y": same}, {"label": "compiles", "y": list(same)},
                             {"label": "explained", "y": [1, 1, 1, 1]}])))
    ax = fig.axes[0]
    lines = [artist for artist in ax.get_lines() if artist.get_label() in
             ("traces", "compiles (same as traces)", "explained")]
    assert len(lines) == 3
    styles = {(artist.get_marker(), artist.get_linestyle()) for artist in lines}
    assert len(styles) == 3
    traces, compiles = lines[0], lines[1]
    assert compiles.get_linewidth() < traces.get_linewidth() and compiles.get_markersize() < traces.get_markersize()
    assert compiles.get_zorder() > traces.get_zorder()  # drawn on top, thinner: both seen
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["traces", "compiles (same as traces)", "explained"]


def test_samples_are_drawn_beside_their_median(drawn):
    runs = [[1.0, 2.0, 3.0], [2.0, 2.5, 9.0], [0.5, 0.6, 0.7]]
    fig = drawn(panels(bar(series=[{"label": "median", "y": [2.0, 2.5, 0.6], "samples": runs}]),
                       line([{"label": "median", "y": [2.0, 2.5, 0.6, 1.0], "samples": runs + [[1.0]]}])))
    for ax, expected in zip(fig.axes, (9, 10)):
        dots = [artist for artist in ax.get_lines()
                if artist.get_marker() == "o" and artist.get_label().startswith("_")]
        values = sorted(float(y) for artist in dots for y in artist.get_ydata())
        assert len(values) == expected
        assert "dots: each sample" in [t.get_text() for t in ax.get_legend().get_texts()]
        assert ax.get_ylim()[1] > 9.0  # the slowest sample is inside the axes


def test_flow_and_timeline_diagrams_draw_every_step(drawn):
    diagram = committed("performance-02")["diagram"]
    fig = drawn(panels(bar()), diagram)
    shown = " ".join(t.get_text() for t in texts(fig))
    for step in diagram["panel"]["steps"]:
        assert step.split()[0] in shown
    assert "Predict first:" in shown
    timeline = committed("performance-01")["diagram"]
    assert "block_until_ready" in " ".join(t.get_text() for t in texts(drawn(panels(bar()), timeline)))


def test_committed_artifacts_use_the_new_keys_where_the_defects_were():
    """performance-02 counts are whole; performance-04's equations on linear axes (they grow in
    proportion to the loop length) and the audit's first call on a log axis; every median of timings
    comes with its samples."""
    p02 = committed("performance-02")["data"]["panels"]
    assert all(p.get("integer") is True for p in p02)
    p04 = committed("performance-04")["data"]["panels"]
    assert p04[0].get("yscale", "linear") == "linear"  # equations grow in proportion: a straight line
    assert all(len(s["samples"]) == len(p04[2]["x"]) for s in p04[2]["series"])
    p05 = committed("performance-05")["data"]["panels"]
    assert [len(s) for s in p05[-1]["series"][0]["samples"]] == [9, 9]
    audit = committed("performance-audit")["data"]["panels"][0]
    assert audit["yscale"] == "log" and len(audit["series"][0]["samples"][1]) == 7
    alt = (ROOT / "artifacts" / "cpu" / "performance-audit.alt.txt").read_text()
    assert "log scale" in alt and "samples" in alt


# --- check_data: the new keys, validated ---------------------------------------------------------

@pytest.mark.parametrize("panel,message", [
    (bar(yscale="logarithmic"), "panel 0 ('Counts'): 'yscale' must be one of linear, log"),
    (bar(integer="yes"), "'integer' must be true or false"),
    (bar(yscale="log", series=[{"label": "t", "y": [1, 0, 2]}]), "a log axis ('yscale': 'log') needs positive"),
    (bar(series=[{"label": "t", "y": [1, 2, 3], "samples": [[1], [2]]}]),
     "'samples' must hold one list of numbers per label (3 lists)"),
    (bar(series=[{"label": "t", "y": [1, 2, 3], "samples": [[1], [2], ["x"]]}]), "'samples' must hold one list"),
    (bar(series=[{"label": "t", "y": [1, 2, "3"]}]), "y values must be numbers or null"),
    (bar(series=[{"y": [1, 2, 3]}]), "each series needs a label and 3 y values"),
    (line([{"label": "t", "y": [1, 2, 3, 4], "samples": [[1]] * 3}]), "one list of numbers per x (4 lists)"),
])
def test_check_data_names_the_panel_and_the_fault(panel, message):
    with pytest.raises(CourseError, match=f"artifact: .*{__import__('re').escape(message)}"):
        render.check_data(panels(panel), None, "artifact")


def test_check_data_accepts_the_new_keys():
    render.check_data(panels(bar(yscale="log", integer=False,
                                 series=[{"label": "t", "y": [1, 2, 3], "samples": [[1, 1.5], [2], []]}])),
                      None, "artifact")


def test_alt_text_gives_the_spread_of_the_samples():
    artifact = committed("performance-01")
    artifact["data"] = panels(bar(yscale="log", series=[{"label": "median", "y": [2.0, 2.5, 0.6],
                                                         "samples": [[1.0, 2.0, 3.0], [2.5], [0.5, 0.6, 0.7]]}]))
    alt = render.alt_text(artifact)
    assert "(count, log scale)" in alt
    assert "a: 2 (samples 1 to 3, 3 of them)" in alt and "b: 2.5," in alt and "c: 0.6 (samples 0.5 to 0.7" in alt


# --- line panels that explain: own x, styles, names, marks, log x; timelines (spans) -------------

def roofline(**extra):
    """A roofline as performance-07 draws it: the roof a line on a grid of its own, the workloads
    points at their intensities, each named, the ridge marked, both axes log."""
    grid = [0.1, 1.0, 4.0, 10.0, 100.0]
    return {"kind": "line", "title": "Roofline", "x": grid, "xlabel": "FLOP/byte", "ylabel": "FLOP/s",
            "xscale": "log", "yscale": "log", "marks": [{"x": 4.0, "label": "ridge 4 FLOP/byte"}],
            "series": [{"label": "roof", "y": [min(4e10, g * 1e10) for g in grid], "style": "line"},
                       {"label": "workloads", "x": [0.25, 40.0], "y": [2e9, 3e10], "style": "points",
                        "names": ["add", "matmul"]}], **extra}


def test_a_roofline_has_a_line_roof_named_points_and_a_marked_ridge(drawn):
    fig = drawn(panels(roofline()))
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    roof = next(line for line in ax.get_lines() if line.get_label() == "roof")
    points = next(line for line in ax.get_lines() if line.get_label() == "workloads")
    assert roof.get_marker() in (None, "None", "none", "") and roof.get_linestyle() == "-"
    assert points.get_linestyle() in ("None", "none") and points.get_marker() not in (None, "None", "")
    assert list(points.get_xdata()) == [0.25, 40.0]  # the series' own x, not the panel's grid
    shown = [t.get_text() for t in texts(fig)]
    assert "add" in shown and "matmul" in shown and "ridge 4 FLOP/byte" in shown
    assert any(abs(line.get_xdata()[0] - 4.0) < 1e-9 and line.get_linestyle() == ":" for line in ax.get_lines())


def test_whole_x_values_on_a_log_axis_are_the_ticks(drawn):
    fig = drawn(panels(line([{"label": "median", "y": [4.0, 2.1, 1.2, 0.7]},
                             {"label": "ideal", "y": [4.0, 2.0, 1.0, 0.5], "style": "line"}],
                            x=[1, 2, 4, 8], xscale="log", yscale="log")))
    ax = fig.axes[0]
    assert list(ax.get_xticks()) == [1, 2, 4, 8]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8"]


def test_a_spans_panel_draws_each_lane_and_series_on_one_clock(drawn):
    timeline = {"kind": "spans", "title": "Steps", "xlabel": "microseconds", "lanes": ["host", "device"],
                "xlim": [0, 100],
                "series": [{"label": "dispatch", "lane": "host", "spans": [[0, 5], [40, 45]]},
                           {"label": "wait", "lane": "host", "spans": [[5, 35]]},
                           {"label": "step on the device", "lane": "device", "spans": [[6, 34], [46, 80]]}]}
    fig = drawn(panels(timeline, dict(timeline, title="Steps again")))
    ax = fig.axes[0]
    assert ax.get_xlim() == (0, 100)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["host", "device"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["dispatch", "wait", "step on the device"]
    bars = [patch for collection in ax.collections for patch in collection.get_paths()]
    assert len(bars) == 5


@pytest.mark.parametrize("panel,message", [
    (roofline(xscale="ln"), "'xscale' must be one of linear, log"),
    (roofline(marks=[{"x": "ridge"}]), "'marks' must be a list of {'x': number, 'label': text}"),
    (roofline(marks=[{"x": -1.0, "label": "below zero"}]), "a log x axis ('xscale': 'log') needs positive marks"),
    (line([{"label": "t", "y": [1, 2], "x": [1, 2, 3]}]), "each series needs a label and 3 y values"),
    (line([{"label": "t", "y": [1, 2, 3, 4], "style": "dashed"}]), "'style' must be one of both, line, points"),
    (line([{"label": "t", "y": [1, 2, 3, 4], "names": ["a"]}]), "'names' must hold one text (or null) per point (4)"),
    (bar(marks=[]), "'xscale', 'marks' and 'ylim' belong to line panels"),
    (line([{"label": "t", "y": [1, 2, 3, 4]}], ylim=[3, 1]), "'ylim' must be [low, high]"),
    (bar(series=[{"label": "t", "y": [1, 2, 3], "style": "line"}]), "'x', 'style' and 'names' belong to line panels"),
    ({"kind": "spans", "title": "T", "lanes": ["host"], "series": [{"label": "s", "lane": "device", "spans": []}]},
     "each series needs a label and a lane among ['host']"),
    ({"kind": "spans", "title": "T", "lanes": ["host"], "series": [{"label": "s", "lane": "host", "spans": [[3, 1]]}]},
     "'spans' must be a list of [start, end], start <= end"),
    ({"kind": "spans", "title": "T", "lanes": ["host"], "xlim": [5, 1], "series": []}, "'xlim' must be [low, high]"),
])
def test_check_data_names_the_fault_in_the_new_keys(panel, message):
    with pytest.raises(CourseError, match=f"artifact: .*{__import__('re').escape(message)}"):
        render.check_data(panels(panel), None, "artifact")


def test_alt_text_names_points_marks_and_spans():
    artifact = committed("performance-01")
    artifact["data"] = panels(roofline(), {"kind": "spans", "title": "Steps", "xlabel": "us", "lanes": ["host"],
                                           "series": [{"label": "dispatch", "lane": "host",
                                                       "spans": [[0, 5], [40, 45]]}]})
    render.check_data(artifact["data"], None, "artifact")
    alt = render.alt_text(artifact)
    assert "workloads (FLOP/s, log scale against FLOP/byte (log scale)): 0.25 (add): 2e+09, 40 (matmul): 3e+10." in alt
    assert "Marked in 'Roofline': ridge 4 FLOP/byte at 4." in alt
    assert "Timeline 'Steps' (us), lane host, dispatch: 2 span(s), from 0 to 45, 10 in all." in alt


@pytest.mark.slow
def test_a_committed_drawing_may_differ_from_this_machines_only_by_antialiasing_rounding():
    """record.same_drawing: another CPU rounds a few antialiased edge pixels one level apart; a
    figure drawn from other data, a damaged file or one of another size is not the drawing."""
    import io

    import numpy as np
    from PIL import Image

    artifact = json.loads((ROOT / "artifacts" / "cpu" / "performance-01.json").read_text())
    drawn, _ = render.draw(artifact)
    pixels = np.asarray(Image.open(io.BytesIO(drawn)).convert("RGBA")).copy()

    def png(array) -> bytes:
        out = io.BytesIO()
        Image.fromarray(array.astype(np.uint8)).save(out, format="PNG")
        return out.getvalue()

    rounded = pixels.copy()
    rounded[100:104, 200:203, :3] = np.clip(rounded[100:104, 200:203, :3].astype(int) + 1, 0, 255)
    assert record.same_drawing(drawn, drawn) and record.same_drawing(png(rounded), drawn)
    redrawn = pixels.copy()
    redrawn[100:104, 200:203, :3] = 255 - redrawn[100:104, 200:203, :3]  # a mark moved: tens of levels
    assert not record.same_drawing(png(redrawn), drawn)
    other = json.loads(json.dumps(artifact))
    other["data"]["panels"][0]["series"][0]["y"][0] *= 3  # the first call measured three times as long
    assert not record.same_drawing(render.draw(other)[0], drawn)
    assert not record.same_drawing(png(pixels[:-1]), drawn)
    assert not record.same_drawing(b"not the drawing", drawn)


def test_a_line_panel_with_a_y_range_writes_the_points_beyond_it(drawn):
    """performance-01's linear panel: one slow warm call would flatten the rest; with 'ylim' the axis
    ends there and the call beyond is a triangle at the edge with its value written."""
    fig = drawn(panels(line([{"label": "warm", "y": [4e-3, 3e-5, 2e-5, 3e-5]}], ylim=[0.0, 1.2e-4])))
    ax = fig.axes[0]
    assert ax.get_ylim() == (0.0, 1.2e-4)
    assert "0.004 (off the scale)" in [t.get_text() for t in texts(fig)]
    assert any(line.get_marker() == "^" and list(line.get_ydata()) == [1.2e-4] for line in ax.get_lines())


def test_legends_take_two_columns_where_they_fit_so_a_log_axis_keeps_its_decades(drawn):
    """performance-10's time panel (three short labels) and 07's roofline: two legend columns, and
    the axis ends within two decades of the data (it ran to 1e5 ms for data up to 100 ms)."""
    fig = drawn(panels(bar(yscale="log", series=[{"label": "as given", "y": [80.0, 0.1, 0.6],
                                                  "samples": [[79.0, 81.0], [0.1], [0.6]]},
                                                 {"label": "fixed", "y": [0.01, 0.01, 0.01]}])))
    ax = fig.axes[0]
    assert ax.get_legend()._ncols == 2
    assert ax.get_ylim()[1] < 2e4  # two decades and a half above 81, not four


def test_a_spans_series_with_nothing_in_the_panel_has_no_legend_entry(drawn):
    timeline = {"kind": "spans", "title": "Steps", "xlabel": "microseconds", "lanes": ["host", "device"],
                "series": [{"label": "dispatch", "lane": "host", "spans": [[0, 5]]},
                           {"label": "wait after the loop", "lane": "host", "spans": [], "colour": "#8172b3"},
                           {"label": "step on the device", "lane": "device", "spans": [[6, 34]]}]}
    fig = drawn(panels(timeline))
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["dispatch", "step on the device"]


def test_point_names_keep_off_the_marks_labels(drawn):
    """performance-07: names of points near a ridge are placed clear of the ridge's label."""
    from matplotlib.transforms import Bbox

    panel = roofline(series=[{"label": "roof", "x": [0.1, 4.0, 100.0], "y": [1e9, 4e10, 4e10], "style": "line"},
                             {"label": "workloads", "x": [3.8, 3.9], "y": [2e9, 3e9], "style": "points",
                              "names": ["near one", "near two"]}])
    fig = drawn(panels(panel))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = {t.get_text(): t.get_window_extent(renderer) for t in texts(fig)}
    mark = boxes["ridge 4 FLOP/byte"]
    for name in ("near one", "near two"):
        assert not Bbox.intersection(boxes[name], mark) or Bbox.intersection(boxes[name], mark).width <= 1, name


def every_committed_artifact():
    """Every recorded artifact, the CPU's in make check, the accelerators' too in make test (slow)."""
    return [pytest.param(path, id=f"{path.parent.name}/{path.stem}",
                         marks=() if path.parent.name == "cpu" else pytest.mark.slow)
            for path in sorted((ROOT / "artifacts").glob("*/performance-*.json"))]


def _overlap(a, b, slack=1.0):
    """Whether two display boxes overlap by more than `slack` pixels both ways."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > slack and min(a.y1, b.y1) - max(a.y0, b.y0) > slack


@pytest.mark.parametrize("path", every_committed_artifact())
def test_every_text_is_legible_fits_the_figure_and_nothing_written_overlaps(path, drawn):
    """Issue 43's figures: a title ran off the figure's edge, a legend out of its panel, bar labels
    into each other and point names onto other points and the roofs. Measured on every committed
    artifact, CPU and accelerator: each text inside the figure, each legend inside its panel, the
    tick labels of an axis apart, and each point's name inside its panel, clear of every other name
    and text. Every text at least 9 points, and the figure at most 12 inches wide (shown at 100 dpi
    in a notebook or README without shrinking much)."""
    from matplotlib.text import Annotation

    artifact = json.loads(path.read_text())
    fig = drawn(artifact["data"], artifact.get("diagram"), title=path.stem)
    small = [(t.get_text()[:30], t.get_fontsize()) for t in texts(fig) if t.get_fontsize() < 9]
    assert not small, small
    assert fig.get_size_inches()[0] <= 12.0
    renderer = fig.canvas.get_renderer()
    drawn_extent, (width, height) = fig.get_tightbbox(renderer), fig.get_size_inches()  # inches
    assert drawn_extent.x0 >= 0 and drawn_extent.y0 >= 0 and drawn_extent.x1 <= width and drawn_extent.y1 <= height
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            box, frame = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
            assert (frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1
                    and frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1), (ax.get_title(), box, frame)
        low, high = sorted(ax.get_xlim())
        ticks = [t for t in ax.get_xticklabels()  # level ones: slanted labels' boxes overlap, the words do not
                 if t.get_visible() and t.get_text() and t.get_rotation() == 0 and low <= t.get_position()[0] <= high]
        boxes = [t.get_window_extent(renderer) for t in ticks]
        for i in range(len(boxes) - 1):
            assert not _overlap(boxes[i], boxes[i + 1]), (ax.get_title(), ticks[i].get_text(), ticks[i + 1].get_text())
        names = [t for t in ax.texts if isinstance(t, Annotation) and t.get_rotation() == 0]
        frame = ax.get_window_extent(renderer)
        for name in names:
            box = Text.get_window_extent(name, renderer)  # the name, without its leader line
            assert (frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1
                    and frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1), (ax.get_title(), name.get_text())
            others = [t for t in ax.texts if t is not name and t.get_text()]
            assert not [t.get_text() for t in others if _overlap(box, Text.get_window_extent(t, renderer))], \
                (ax.get_title(), name.get_text())


def test_wrapping_measures_the_text_and_keeps_words_whole():
    """figure._wrap fits lines to a width measured in the figure's font (a title of 44 characters
    at 11 points ran past a panel of 3.7 inches estimated at 0.55 em a character) and never splits
    a word: one too long for the width stands alone on its line."""
    title = "Ceilings: measured here (float32) vs TPU v5e (published bfloat16 peak)"
    wrapped = figure._wrap(title, figure.AXES_WIDTH, figure.TITLE)
    assert wrapped.replace("\n", " ") == title
    assert figure._points(wrapped, figure.TITLE) <= figure.AXES_WIDTH * 72
    assert figure._points(title, figure.TITLE) > figure.AXES_WIDTH * 72  # so it had to wrap
    assert figure._wrap("update, donated", 0.3, figure.FONT) == "update,\ndonated"


def test_a_flow_without_notes_and_an_empty_title_draw(drawn):
    """Notes are optional (the docstring says so): an empty text wraps to itself."""
    assert figure._wrap("", 1.0, figure.FONT) == "" and figure._points("", figure.FONT) == 0.0
    fig = drawn(panels(bar(title="")),
                {"title": "t", "prediction": "p", "panel": {"kind": "flow", "steps": ["a", "b"]}})
    assert {"a", "b"} <= {t.get_text() for t in texts(fig)}
