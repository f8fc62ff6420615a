"""`perfcourse site`: the course as a static website, built with Jupyter Book 2 (MyST), offline.

The book's sources are written into a build folder (`_site/` by default, git-ignored):

  book/myst.yml                          the table of contents: home, lessons, then docs/ by reader
  book/README.md                         the home page (its links to docs/ and release/ hold in the book)
  book/docs/                             docs/, as it is
  book/release/<lesson>/<lesson>.ipynb   the release notebook students get, never executed here,
                                         opened with launch links (Colab, the course's JupyterHub
                                         through nbgitpuller) and closed with the reference
                                         recording of artifacts/<backend>/ (figure, alt text,
                                         key numbers), marked as one machine's recording
  book/theme/template.yml                the site template: a MyST site template that renders
                                         itself (`build.render`) with site/theme.py

then `jupyter-book build --html --strict` turns them into `html/`. MyST's own web themes
(book-theme) are downloaded at build time from outside the package registries; this template is
local and its renderer is the course's own Python, so the build needs no host but this one. The
engine's update check (it asks the npm registry for mystmd's latest version) is pointed at a
closed loopback port.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from .. import launch
from ..course import CourseError, Settings, read_notebook, source_notebook, write_atomic
from ..course import settings as course_settings
from ..release import COLAB_CELL_ID, released, released_lessons

TITLE = "JAX performance course"
DEFAULT_OUTPUT = "_site"
DOCS = "docs"
# The readers of docs/, one folder each, in the order the site lists them; within a folder, the
# pages in this order, then any other page alphabetically.
SECTIONS = (
    ("For students", "students", ("start", "colab")),
    ("For instructors", "instructors", ("commands", "grading", "configuration", "report", "cluster", "hub", "trust")),
    ("For course authors", "authors", ("lesson", "checks", "samples", "artifacts", "tolerances", "tests", "site",
                                       "code", "audit-project")),
)
# Where the engine's update check goes (nothing listens on port 9 of the loopback).
CLOSED_REGISTRY = "http://127.0.0.1:9/"
BUILD_SECONDS = 600


def _launch_markdown(settings: Settings, lesson: str) -> str:
    lines = ["```{note}",
             "This page is the notebook students get (`release/" + lesson + "/" + lesson + ".ipynb`), "
             "shown as it is, not executed. Its numbers and figure, at the end of the page, are "
             f"[one machine's recording](#{lesson}-recording)."]
    links = launch.links(settings, lesson)
    if links:
        lines += ["", " · ".join(f"[{label}]({link})" for label, link in links)]
    return "\n".join(lines + ["```"])


def _number(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return json.dumps(value) if not isinstance(value, str) else value
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4g}"


def _key_numbers(stdout: str, limit: int = 24) -> list[tuple[str, str]]:
    """The recorded report's values that read as one line (numbers, words, short lists), nested
    objects one level down named `outer.inner`; at most `limit` of them."""
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        return []
    if not isinstance(report, dict):
        return []

    def scalar(value) -> bool:
        return isinstance(value, (int, float, str, bool)) or value is None

    rows = []
    for key, value in report.items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for inner, v in items:
            name = key if inner is None else f"{key}.{inner}"
            if isinstance(v, list) and len(v) <= 8 and all(scalar(x) for x in v):
                rows.append((name, "[" + ", ".join(_number(x) for x in v) + "]"))
            elif scalar(v):
                rows.append((name, _number(v)))
    return rows[:limit]


def _cell_text(text: str) -> str:
    """A recorded value as the text of a table cell: "|" ends a cell, and "@name" would be read as a
    citation (a sharded type prints as float32[64@fsdp,128]): the one is escaped, the other written
    as its character reference."""
    return text.replace("|", "\\|").replace("@", "&#64;").replace("\n", " ")


def recording_markdown(root: Path, lesson: str, folder: Path) -> str:
    """The lesson's reference recordings (artifacts/<backend>/), their figures copied into `folder`."""
    parts = [f"({lesson}-recording)=", "## Reference recording", ""]
    found = False
    from ..artifacts.record import content_hash  # the recordings' own hash of the lesson's source

    current = content_hash(read_notebook(source_notebook(root, lesson)))
    for backend_dir in sorted((root / "artifacts").glob("*/"), key=lambda p: (p.name != "cpu", p.name)):
        path = backend_dir / f"{lesson}.json"
        if not path.is_file():
            continue
        found = True
        artifact = json.loads(path.read_text(encoding="utf-8"))
        env = artifact.get("environment", {})
        backend = backend_dir.name
        parts += [f"### Recorded on {backend}", ""]
        if artifact.get("contentHash") != current:  # an accelerator's, kept until recorded there again
            parts += ["```{note}", "This recording was made on an earlier version of the lesson: its text or "
                      "code has changed since, and it has not been recorded on this backend again yet.", "```", ""]
        parts += ["```{important}",
                  f"One machine's recording, made once: `perfcourse artifacts` executed the lesson with its "
                  f"solutions on {env.get('backend', backend)} ({env.get('deviceCount', '?')} device(s); "
                  f"jax {env.get('jax', '?')}, numpy {env.get('numpy', '?')}) at {artifact.get('generatedAt', '?')}. "
                  "Timings are that run's observations: they show the method, not how fast your machine "
                  "or any other is.",
                  "```", ""]
        image = backend_dir / f"{lesson}.png"
        if image.is_file():
            name = f"{lesson}-{backend}.png"
            shutil.copy2(image, folder / name)
            alt_file = backend_dir / f"{lesson}.alt.txt"
            alt = alt_file.read_text(encoding="utf-8").strip() if alt_file.is_file() else f"{lesson} on {backend}"
            parts += [f"```{{figure}} {name}", f":alt: {_cell_text(alt)}", "",
                      f"{lesson} as recorded on {backend} (`artifacts/{backend}/{lesson}.png`).", "```", ""]
        diagram = artifact.get("diagram") or {}
        if diagram.get("prediction"):
            parts += [f"**Predict first.** {diagram['prediction']}", ""]
        if diagram.get("reading"):
            parts += [f"**Reading the diagram.** {diagram['reading']}", ""]
        rows = _key_numbers(artifact.get("stdout", ""))
        if rows:
            parts += ["Key numbers of the recorded report (its one-line values):", "",
                      "| value | recorded |", "|---|---|"]
            parts += [f"| `{key}` | {_cell_text(value)} |" for key, value in rows]
            parts += [""]
        parts += ["````{dropdown} The whole recorded report (what the report cells printed)",
                  "```text", artifact.get("stdout", "").rstrip(), "```", "````", ""]
    if not found:
        parts += ["No reference recording yet (`perfcourse artifacts --lesson " + lesson + "`)."]
    return "\n".join(parts)


def lesson_notebook(root: Path, lesson: str, folder: Path, settings: Settings | None = None):
    """The release notebook as the site shows it: its own Colab badge cell (an image from
    elsewhere) left out, launch links after the title, the reference recording at the end."""
    import nbformat

    nb = read_notebook(released(root, lesson))
    nb.cells = [c for c in nb.cells if c.get("id") != COLAB_CELL_ID]
    at = next((i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
               and c.source.lstrip().startswith("# ")), 0)
    links_cell = nbformat.v4.new_markdown_cell(_launch_markdown(settings or course_settings(root), lesson))
    links_cell.id = "site-launch"
    nb.cells.insert(at, links_cell)
    recording = nbformat.v4.new_markdown_cell(recording_markdown(root, lesson, folder))
    recording.id = "site-recording"
    nb.cells.append(recording)
    for cell in nb.cells:
        cell.id = f"{lesson}-{cell.id}"[:64]  # the book's identifiers are project-wide: cell-3 is in every lesson
        if cell.cell_type == "code":  # a page, not a run: no outputs or counts from anywhere
            cell.outputs, cell.execution_count = [], None
    return nb


# What the students' build holds of docs/ (perfcourse site --students): their own pages. How hidden
# checks judge, the hostile catalogue and the instructors' commands stay on the instructors' build.
STUDENT_FOLDERS = ("students",)


def doc_pages(root: Path, students: bool = False) -> list[tuple[str, list[str]]]:
    """(section title, [docs/<folder>/<page>.md, ...]) in the site's order; `students`: their pages only."""
    found = []
    for title, folder, order in SECTIONS:
        if students and folder not in STUDENT_FOLDERS:
            continue
        here = root / DOCS / folder
        names = sorted(p.stem for p in here.glob("*.md")) if here.is_dir() else []
        ordered = [n for n in order if n in names] + [n for n in names if n not in order]
        files = [f"{DOCS}/{folder}/{name}.md" for name in ordered]
        if files:
            found.append((title, files))
    return found


def _yaml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML string


def unlinked_lessons(text: str, released: list[str]) -> str:
    """Markdown whose links into release/ of a lesson not among `released` (not released yet)
    become their text."""
    import re

    def unlink(found: re.Match) -> str:
        return found.group(0) if found.group(2) in released else found.group(1)

    return re.sub(r"\[([^\]]+)\]\(release/([^/)\s]+)/[^)\s]*\)", unlink, text)


def unlinked_docs(text: str, kept: set[str], prefix: str = "") -> str:
    """Markdown whose links to a docs/ page the build leaves out become their text. `prefix` is the
    linking page's folder, relative to the root ("" for the home page, "docs/students/" for a
    student's page), so relative links resolve as the site resolves them."""
    import posixpath
    import re

    def unlink(found: re.Match) -> str:
        target = posixpath.normpath(posixpath.join(prefix, found.group(2).split("#")[0]))
        return found.group(0) if not target.startswith(f"{DOCS}/") or target in kept else found.group(1)

    return re.sub(r"\[([^\]]+)\]\(([^)\s]+\.md(?:#[^)\s]*)?)\)", unlink, text)


def write_sources(root: Path, book: Path, settings: Settings | None = None, students: bool = False) -> dict:
    """Write the book's sources into `book` (emptied first); the pages the site must have. `students`:
    the build students are shown, whose docs are their own pages only (links to the others become text)."""
    import nbformat

    if book.exists():
        shutil.rmtree(book)
    book.mkdir(parents=True)
    settings = settings or course_settings(root)  # read once, for every lesson page
    lesson_ids = settings.released_by(released_lessons(root))  # the lessons students have so far
    if not lesson_ids:
        raise CourseError(f"{settings.path}: [schedule] has released no lesson yet: the site would have no lesson")
    sections = doc_pages(root, students)
    kept = {page for _, pages in sections for page in pages}
    # The home page, at its own path (docs/ links to it); a lesson not released yet is named, not linked.
    home = unlinked_lessons((root / "README.md").read_text(encoding="utf-8"), lesson_ids)
    write_atomic(book / "README.md", unlinked_docs(home, kept) if students else home)
    if (root / DOCS).is_dir() and not students:
        shutil.copytree(root / DOCS, book / DOCS)
    for lesson in lesson_ids:
        folder = book / "release" / lesson
        folder.mkdir(parents=True)
        write_atomic(folder / f"{lesson}.ipynb", nbformat.writes(lesson_notebook(root, lesson, folder, settings)))
    for _, pages in sections:
        for page in pages:
            if not (book / page).exists():
                (book / page).parent.mkdir(parents=True, exist_ok=True)
                text = (root / page).read_text(encoding="utf-8")
                write_atomic(book / page, unlinked_docs(text, kept, page.rsplit("/", 1)[0] + "/"))
    toc = ["    - file: README.md", "    - title: Lessons", "      children:"]
    toc += [f"        - file: release/{lesson}/{lesson}.ipynb" for lesson in lesson_ids]
    for title, pages in sections:
        toc += [f"    - title: {_yaml_str(title)}", "      children:"] + [f"        - file: {p}" for p in pages]
    write_atomic(book / "myst.yml", "\n".join([
        "# Written by perfcourse site (src/perfcourse/site/build.py); edit that, not this.",
        "version: 1",
        "project:",
        f"  title: {_yaml_str(TITLE)}",
        "  toc:", *toc,
        "site:",
        "  template: theme",
        ""]))
    theme = book / "theme"
    theme.mkdir()
    render = " ".join(json.dumps(part) for part in (sys.executable, "-m", "perfcourse.site.theme"))
    write_atomic(theme / "template.yml", "\n".join([
        "myst: v1",
        "kind: site",
        f"title: {_yaml_str(TITLE + ' (perfcourse site theme)')}",
        "description: Static pages rendered by perfcourse.site.theme from the engine's content, offline",
        "build:",
        f"  render: {_yaml_str(render)}",
        ""]))
    return {"index": "README.md", "lessons": lesson_ids,
            "docs": [p for _, pages in sections for p in pages]}


def broken_links(html_dir: Path) -> list[str]:
    """Every link or image of the site's pages that points at no file or anchor of the site."""
    from html.parser import HTMLParser
    from urllib.parse import unquote, urlsplit

    class Page(HTMLParser):
        def __init__(self):
            super().__init__()
            self.ids, self.refs = set(), []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if attrs.get("id"):
                self.ids.add(attrs["id"])
            for name in ("href", "src"):
                if attrs.get(name) is not None:
                    self.refs.append(attrs[name])

    pages = {}
    for path in sorted(html_dir.glob("*.html")):
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.name] = page
    broken = []
    for name, page in pages.items():
        for ref in page.refs:
            parts = urlsplit(ref)
            if parts.scheme or parts.netloc:
                continue
            target = unquote(parts.path) or name
            if not (html_dir / target).is_file():
                broken.append(f"{name}: {ref}")
            elif parts.fragment and target in pages and parts.fragment not in pages[target].ids:
                broken.append(f"{name}: {ref} (no such anchor)")
    return broken


def build(root: Path, output: Path, verbose: bool = False, settings: Settings | None = None,
          students: bool = False) -> dict:
    """Write the sources into output/book, build them, and put the site in output/html."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    if not jupyter_book.is_file():
        raise CourseError(f"{jupyter_book}: Jupyter Book is not installed here "
                          "(make site installs requirements-site.txt)")
    if not shutil.which("node"):
        raise CourseError("node is missing: Jupyter Book runs on Node.js (apt-get install nodejs)")
    output = output.resolve()
    if output == root or root.is_relative_to(output) or (output.exists() and not output.is_dir()):
        raise CourseError(f"{output}: not a folder the site can be written into")
    book = output / "book"
    expected = write_sources(root, book, settings, students)
    env = {**os.environ, "npm_config_registry": CLOSED_REGISTRY, "PERFCOURSE_ROOT": str(root)}
    env.pop("BASE_URL", None)
    command = [str(jupyter_book), "build", "--html", "--strict", *(["--debug"] if verbose else [])]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=book, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=BUILD_SECONDS)
    except subprocess.TimeoutExpired:
        raise CourseError(f"jupyter-book build ran past {BUILD_SECONDS} s in {book}") from None
    log = done.stdout + done.stderr
    write_atomic(output / "build.log", log)
    warnings = sorted({line.strip() for line in log.splitlines() if line.lstrip().startswith(("⚠️", "🚨", "⛔️"))})
    if done.returncode or warnings:
        tail = "\n".join(log.strip().splitlines()[-15:])
        raise CourseError(f"jupyter-book build failed (exit {done.returncode}, {len(warnings)} warning(s); "
                          f"{output / 'build.log'}):\n" + "\n".join(warnings[:15] or [tail]))
    html = output / "html"
    if html.exists():
        shutil.rmtree(html)
    shutil.move(book / "_build" / "html", html)
    for lesson in expected["lessons"]:  # the download is the notebook students get, without the page's cells
        download = html / "build" / f"{lesson}.ipynb"
        if download.is_file():
            shutil.copy2(released(root, lesson), download)
    manifest = json.loads((html / "pages.json").read_text(encoding="utf-8"))
    built = {page["source"] for page in manifest["pages"]}
    wanted = {"README.md", *expected["docs"], *(f"release/{lesson}/{lesson}.ipynb" for lesson in expected["lessons"])}
    if wanted - built:
        raise CourseError(f"the site lacks pages for: {', '.join(sorted(wanted - built))}")
    broken = broken_links(html)
    if broken:
        raise CourseError(f"{len(broken)} broken link(s) in {html}: " + "; ".join(broken[:10]))
    return {**expected, "html": html, "seconds": time.monotonic() - started, "pages": len(manifest["pages"])}


def missing_links_note(settings: Settings) -> str | None:
    """For the instructor (never on a student's page): why the lesson pages carry no launch link."""
    if launch.publication(settings) is not None:
        return None
    return ("note: the lesson pages carry no launch link: course.toml's [publication] repository (where "
            "'perfcourse publish' output is pushed) gives \"Open in Colab\" links, and with [hub] url JupyterHub "
            "links (nbgitpuller)")


def main(root: Path, output: Path | None, verbose: bool = False, students: bool = False) -> int:
    settings = course_settings(root)  # read once, for the pages and the note below
    result = build(root, output or root / DEFAULT_OUTPUT, verbose, settings, students)
    print(f"built {result['pages']} pages ({len(result['lessons'])} lessons, {len(result['docs'])} docs pages) "
          f"in {result['seconds']:.1f} s: {result['html'] / 'index.html'}")
    note = missing_links_note(settings)
    if note:
        print(note)
    return 0
