"""Feedback: a cell with hidden tests shows its verdict, with a check's own message when the
error is a check's verdict for students, and nothing else of the hidden tests (fast tier)."""
from __future__ import annotations

from nbformat.v4 import new_code_cell, new_notebook, new_output

from perfcourse.checks import STUDENT_FACING, CheckFailed, audit, trusted
from perfcourse.grading.cell_error import MESSAGE_CHARS
from perfcourse.grading.feedback import HideHiddenTestOutputs

HIDDEN = "x = 1\n### BEGIN HIDDEN TESTS\nsecret_input = 42\ncheck(x)\n### END HIDDEN TESTS"


def feedback_of(*outputs) -> str:
    nb = new_notebook(cells=[new_code_cell(HIDDEN, outputs=list(outputs))])
    nb, _ = HideHiddenTestOutputs().preprocess(nb, {})
    (out,) = nb.cells[0].outputs
    return out["text"]


def error(ename, evalue):
    return new_output("error", ename=ename, evalue=evalue,
                      traceback=["secret_input = 42 in the traceback", f"{ename}: {evalue}"])


def test_a_checks_verdict_is_shown_and_nothing_else():
    printed = new_output("stream", name="stdout", text="hidden test printed secret_input=42\n")
    text = feedback_of(printed, error("CheckFailed", "the clock was read before the result of call 3 was ready"))
    assert text == "This cell's checks failed:\nthe clock was read before the result of call 3 was ready\n"


def test_any_other_error_shows_its_type_only():
    text = feedback_of(error("AssertionError", "Not equal to tolerance: x: array([42.])"))
    assert "AssertionError" in text and "42" not in text and "tolerance" not in text


def test_passed_cells_say_so_and_long_or_odd_messages_are_tamed():
    assert feedback_of() == "This cell's checks passed.\n"
    text = feedback_of(error("AuditFailure", "line one\n\x1b[31mred\x1b[0m\n" + "y" * 5000))
    assert "\x1b" not in text and len(text) < MESSAGE_CHARS + 100 and text.rstrip().endswith("...")


def test_every_kind_of_check_failure_is_named_student_facing():
    kinds = {CheckFailed, audit.AuditFailure, trusted.UntrustedResult}
    found = set(CheckFailed.__subclasses__()) | {CheckFailed}
    assert found <= kinds and {k.__name__ for k in kinds} == set(STUDENT_FACING)
    assert all(issubclass(k, AssertionError) for k in kinds)  # nbgrader scores them as failures


# --- a student's markup never runs where an instructor looks (grading/sanitize.py) -------------
RAN = "window.perfcourseRan = (window.perfcourseRan || 0) + 1"


def hostile_markup(sanitized: bool):
    """A graded notebook whose outputs and cells carry every kind of markup a page would run:
    a script, an event handler, a JavaScript output, SVG, a javascript: link, image metadata
    that becomes an attribute, Markdown and raw HTML cells, a tag that becomes a class."""
    from nbformat.v4 import new_markdown_cell, new_raw_cell

    from perfcourse.grading.sanitize import sanitize_html

    nb = new_notebook(cells=[
        new_code_cell("display(HTML(...))", outputs=[
            new_output("display_data", data={
                "text/html": f"<b>kept</b><script>{RAN}</script><img src=x onerror=\"{RAN}\">"
                             f"<a href=\"javascript:{RAN}\">link</a><table><tr><td>cell</td></tr></table>",
                "application/javascript": RAN, "text/plain": "plain",
                "image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{RAN}\"></svg>"}),
            new_output("execute_result", execution_count=1, data={"image/png": "iVBORw0KGgo=", "text/plain": "p"},
                       metadata={"image/png": {"width": f"1 onerror=\"{RAN}\""}}),
            new_output("stream", name="stdout", text=f"<script>{RAN}</script>")]),
        new_markdown_cell(f"Answer <img src=y onerror=\"{RAN}\"> <script>{RAN}</script> a < b"),
        # Markdown links: nbconvert renders their destinations as written, entities decoded.
        new_markdown_cell("See [this](javascript&#58;window.perfcourseRan=9) and "
                          "[that](JaVaScRiPt:window.perfcourseRan=9)"),
        new_markdown_cell("Plain *Markdown* keeps its source: `a < b`, [a link](https://example.org)\n\n> a quote"),
        new_raw_cell(f"<script>{RAN}</script>", metadata={"format": "text/html"}),
    ])
    nb.cells[0].metadata["tags"] = ["ok-tag", f"x\"><script>{RAN}</script>"]
    if sanitized:
        sanitize_html(nb)
    return nb


def rendered(nb) -> str:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nb)
    return body


def active(html: str) -> list[str]:
    """What a browser would run of a page: each script's text, event handler and javascript: URL."""
    from html.parser import HTMLParser

    found = []

    class Reader(HTMLParser):
        script = False

        def handle_starttag(self, tag, attrs):
            self.script = tag == "script"
            found.extend(f"{name}={value}" for name, value in attrs
                         if name.startswith("on") or "javascript:" in (value or "").replace(" ", "").lower())

        def handle_endtag(self, tag):
            self.script = False

        def handle_data(self, data):
            if self.script:
                found.append(data)

    Reader().feed(html)
    return found


def test_sanitized_markup_keeps_text_and_tables_and_nothing_that_runs():
    nb = hostile_markup(sanitized=True)
    outputs = nb.cells[0].outputs
    html = outputs[0].data["text/html"]
    assert "<b>kept</b>" in html and "<td>cell</td>" in html and active(html) == []
    assert set(outputs[0].data) == {"text/html", "text/plain"} and outputs[1].metadata == {}
    assert outputs[2].text == f"<script>{RAN}</script>"  # a stream is text: nbconvert escapes it
    assert active(nb.cells[1].source) == active(nb.cells[4].source) == []
    assert "<a>this</a>" in nb.cells[2].source and "<a>that</a>" in nb.cells[2].source
    assert nb.cells[3].source == hostile_markup(sanitized=False).cells[3].source
    assert nb.cells[0].metadata["tags"] == ["ok-tag"]
    assert not [text for text in active(rendered(nb)) if "perfcourseRan" in text]


def test_unsanitized_the_same_markup_would_reach_the_page():
    ran = [text for text in active(rendered(hostile_markup(sanitized=False))) if "perfcourseRan" in text]
    assert len(ran) >= 4, ran  # the script, the handlers, the JavaScript output, the raw cell


def test_feedback_sanitizes_every_notebook_it_sees():
    nb = hostile_markup(sanitized=False)
    nb, _ = HideHiddenTestOutputs().preprocess(nb, {})
    assert not [text for text in active(rendered(nb)) if "perfcourseRan" in text]
