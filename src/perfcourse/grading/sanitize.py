"""Put back the instructor's cell roles and deleted grade cells, whatever the student did.

`RestoreDeletedCells` is nbgrader's OverwriteCells with one fix: nbgrader puts a deleted grade
cell back after the source cell just before it, assuming that one is a solution or grade cell,
and aborts the notebook (KeyError) when it is a locked helper cell (performance-01's
`check_helpers` before `test_timer_synchronized`, and others). Here the deleted cell goes after
the nearest earlier source cell the notebook still holds, or first.


OverwriteCells restores a grade cell's source, points and lock, but not whether it is a grade
cell at all: a student who unticks "grade" on a test cell makes nbgrader abort the whole
notebook ("Inconsistent checksums"). This preprocessor sets every cell's nbgrader role (grade,
solution, locked, points) from the gradebook's record of its grade id, and strips nbgrader
metadata a student invented for a cell the gradebook does not know.

`sanitize_html(nb)` makes a graded notebook safe to show an instructor (Formgrader renders it in
the instructor's Jupyter origin, with the instructor's session; the feedback's HTML is rendered
from it): with nbconvert's SanitizeHTML (bleach), every output's HTML and Markdown is cleaned, any
other kind of data but plain text and PNG or JPEG images (JavaScript, SVG, widgets, LaTeX) is
removed, outputs' metadata (image sizes become attributes) is dropped, and the Markdown and raw
cells that are not the instructor's locked cells are cleaned as well: a Markdown cell is rendered
as nbconvert renders it (raw HTML and a link's `javascript:` destination pass its renderer) and,
only when that holds anything active, replaced by the rendering cleaned by bleach; the lessons'
own Markdown renders with nothing active and keeps its source. Streams and errors are text,
escaped by nbconvert; what decides a grade (error outputs) is never changed.
"""
from __future__ import annotations

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells


class RestoreCellRoles(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            # The lesson's cells read once: three queries per cell (source, grade, solution) were
            # most of this step's time, on every notebook.
            try:
                recorded = gradebook.find_notebook(info["notebook"], info["assignment"])
            except MissingEntry:
                recorded = None
            sources = {cell.name: cell for cell in recorded.source_cells} if recorded else {}
            graded = {cell.name: cell for cell in recorded.grade_cells} if recorded else {}
            solutions = {cell.name for cell in recorded.solution_cells} if recorded else set()
            for cell in nb.cells:
                self._restore(cell, sources, graded, solutions)
        return nb, resources

    @staticmethod
    def _restore(cell, sources: dict, graded: dict, solutions: set) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            return
        grade_id = meta.get("grade_id")
        source = sources.get(grade_id)
        if source is None:
            del cell.metadata["nbgrader"]
            return
        grade = graded.get(grade_id)
        restored = {
            "grade": grade is not None,
            "grade_id": grade_id,
            "locked": bool(source.locked),
            "schema_version": 3,
            "solution": grade_id in solutions,
            "task": False,
        }
        if grade is not None:
            restored["points"] = float(grade.max_score)
        for key in ("checksum",):
            if key in meta:
                restored[key] = meta[key]
        cell.metadata["nbgrader"] = restored


class RestoreDeletedCells(OverwriteCells):
    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_ids = [cell.name for cell in source_nb.source_cells]
        sources = {cell.name: cell for cell in source_nb.source_cells}
        solutions = {cell.name for cell in source_nb.solution_cells}
        for grade_cell in sorted(source_nb.grade_cells, key=lambda cell: source_ids.index(cell.name)):
            present = {c.metadata["nbgrader"]["grade_id"]: index for index, c in enumerate(nb.cells)
                       if c.metadata.get("nbgrader", {}).get("grade_id")}
            if grade_cell.name in present:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook", grade_cell.name)
            earlier = source_ids[:source_ids.index(grade_cell.name)]
            at = next((present[name] + 1 for name in reversed(earlier) if name in present), 0)
            nb.cells.insert(at, self.missing_cell_transform(sources[grade_cell.name], grade_cell.max_score,
                                                            is_solution=grade_cell.name in solutions))
        return nb, resources


# What an instructor's page may show of a student's HTML: text structure, tables, no links out of
# it to anything but http(s), no images (a relative image would be fetched from the instructor's
# own Jupyter server), no scripts, styles, forms or frames.
SAFE_TAGS = ("a", "abbr", "b", "blockquote", "br", "code", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
             "i", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead",
             "tr", "ul")
SAFE_ATTRIBUTES = {"a": ["href", "title"], "abbr": ["title"], "td": ["colspan", "rowspan"],
                   "th": ["colspan", "rowspan"]}
SAFE_OUTPUT_KEYS = {"text/plain", "image/png", "image/jpeg"}
CLEANED_OUTPUT_KEYS = {"text/html", "text/markdown"}


def _sanitizer():
    from nbconvert.preprocessors.sanitize import SanitizeHTML

    return SanitizeHTML(tags=list(SAFE_TAGS), attributes=SAFE_ATTRIBUTES, strip=False, strip_comments=True,
                        safe_output_keys=set(SAFE_OUTPUT_KEYS), sanitized_output_types=set(CLEANED_OUTPUT_KEYS))


def sanitize_html(nb) -> None:
    """Clean, in place, everything of `nb` an HTML page would render as markup (see the module's text)."""
    cleaner = _sanitizer()
    for cell in nb.cells:
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") in ("display_data", "execute_result"):
                    output["metadata"] = {}
                    data = output.get("data") or {}
                    for key in list(data):
                        if isinstance(data[key], list):  # nbformat's multi-line form
                            data[key] = "".join(map(str, data[key]))
            cleaner.sanitize_code_outputs(cell.get("outputs", []))
        elif not cell.get("metadata", {}).get("nbgrader", {}).get("locked"):
            source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
            if cell.cell_type == "markdown":
                cell.source = _clean_markdown(source)
            elif "<" in source:  # a raw cell is emitted verbatim where its format is HTML
                cell.source = cleaner.sanitize_html_tags(source)
        tags = cell.get("metadata", {}).get("tags")
        if isinstance(tags, list):  # a tag becomes a class name in nbconvert's HTML
            cell.metadata["tags"] = [tag for tag in tags if isinstance(tag, str) and tag.replace("-", "").replace(
                "_", "").isalnum() and tag.isascii()]


# What nbconvert's Markdown renderer makes of ordinary Markdown (it lets raw HTML through, and a
# link's javascript: destination too, so the source alone cannot be judged).
MARKDOWN_TAGS = SAFE_TAGS + ("del", "em", "img", "s", "strong")
MARKDOWN_ATTRIBUTES = {**SAFE_ATTRIBUTES, "a": ["href", "title", "class"], "img": ["alt", "title"],
                       **{tag: ["class"] for tag in ("code", "pre", "span", "div")},
                       **{f"h{level}": ["id"] for level in range(1, 7)}}
SAFE_SCHEMES = ("", "http", "https", "mailto")


def _clean_markdown(source: str) -> str:
    """A Markdown cell's source, or, when what nbconvert renders of it would hold anything active
    (a tag outside MARKDOWN_TAGS, an event handler, a link whose scheme is not http(s) or mailto),
    that rendering cleaned by bleach (HTML is Markdown too: it renders as the text it shows)."""
    import bleach
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    try:
        rendered = markdown2html_mistune(source)
    except Exception:  # noqa: BLE001 (what cannot be rendered here is shown as escaped text)
        return bleach.clean(source, tags=[], strip=False)
    if not _active(rendered):
        return source
    return bleach.clean(rendered, tags=list(MARKDOWN_TAGS), attributes=MARKDOWN_ATTRIBUTES,
                        protocols=["http", "https", "mailto"], strip=False, strip_comments=True)


def _active(html: str) -> bool:
    from html import unescape
    from html.parser import HTMLParser
    from urllib.parse import urlsplit

    found = []

    class Reader(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag not in MARKDOWN_TAGS + ("p", "br", "hr"):
                found.append(tag)
            for name, value in attrs:
                if name.startswith("on") or name not in MARKDOWN_ATTRIBUTES.get(tag, ()) + ["src"] * (tag == "img"):
                    found.append(name)
                elif name in ("href", "src"):
                    link = "".join(ch for ch in unescape(value or "") if ch.isprintable() and not ch.isspace())
                    try:
                        scheme = urlsplit(link).scheme.lower()
                    except ValueError:
                        scheme = "?"
                    if scheme not in SAFE_SCHEMES:
                        found.append(name)

        def handle_startendtag(self, tag, attrs):
            self.handle_starttag(tag, attrs)

        def handle_comment(self, data):
            found.append("comment")

    Reader(convert_charrefs=True).feed(html)
    return bool(found)
