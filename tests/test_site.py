"""The course site (perfcourse site): built offline into a temporary folder, every page and lesson
there, every link whole, and no connection anywhere but the loopback."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from conftest import ROOT

# `browser` is a fixture (tests/jupyter_browser.py): importing it puts it in this module's reach.
from jupyter_browser import browser  # noqa: F401

from perfcourse import launch
from perfcourse.site import build as site
from perfcourse.site import theme as site_theme
from perfcourse.course import lessons
from perfcourse.course import settings as course_settings

JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class Listener:
    """A loopback port that accepts and counts connections: every proxy variable points here, so
    a request the build sends anywhere through a proxy arrives and is counted."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.first_bytes: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.settimeout(1)
            try:
                self.first_bytes.append(conn.recv(200))
            except OSError:
                pass
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.refs, self.images = set(), [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.refs.append(attrs[name])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not shutil.which("node"):
        pytest.skip("node is missing: Jupyter Book runs on Node.js (.ci/run installs nodejs)")
    if not JUPYTER_BOOK.is_file():
        pytest.skip("Jupyter Book is not installed (make site / make test install requirements-site.txt)")
    output = tmp_path_factory.mktemp("site")
    listener = Listener()
    proxy = f"http://127.0.0.1:{listener.port}"
    env = {**os.environ, **{name: proxy for name in PROXY_VARIABLES}}
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    try:
        done = subprocess.run([str(Path(sys.executable).with_name("perfcourse")), "site", "--output", str(output),
                               "--verbose"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        listener.close()
    assert done.returncode == 0, done.stdout + done.stderr
    return output, listener, done.stdout


def _pages(output: Path) -> tuple[Path, dict, dict]:
    """The site's folder, its manifest (pages.json) and its pages by source file."""
    html = output / "html"
    manifest = json.loads((html / "pages.json").read_text())
    return html, manifest, {page["source"]: page for page in manifest["pages"]}


@pytest.mark.e2e  # one build, about 15 s (Node.js and the course's theme)
def test_every_page_is_built(built):
    output, _, stdout = built
    html, manifest, sources = _pages(output)
    wanted = {"README.md", *(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))}
    assert wanted <= set(sources), f"pages missing: {wanted - set(sources)}"
    for page in manifest["pages"]:
        text = (html / page["file"]).read_text()
        assert "<article>" in text and "<h1>" in text and len(text) > 2000, page["file"]
    assert (html / "index.html").is_file()
    assert manifest["unrendered_types"] == [], "node types the theme drew only as their children"
    assert f"built {len(manifest['pages'])} pages" in stdout


@pytest.mark.e2e  # one build, about 15 s (Node.js and the course's theme)
def test_every_lesson_is_a_page_with_its_recording(built):
    html, _, sources = _pages(built[0])
    for lesson in lessons(ROOT):
        page = sources.get(f"release/{lesson}/{lesson}.ipynb")
        assert page, f"{lesson} has no page"
        text = (html / page["file"]).read_text()
        parser = Links()
        parser.feed(text)
        assert f"{lesson}-recording" in parser.ids
        assert "One machine’s recording" in text or "One machine's recording" in text
        figure = [src for src in parser.images if src.startswith(f"build/{lesson}-") and src.endswith(".png")]
        assert figure, f"{lesson}: no recorded figure on its page"
        assert (html / figure[0]).read_bytes().startswith(b"\x89PNG")
        # the download is the release notebook itself, not the page
        assert (html / "build" / f"{lesson}.ipynb").read_bytes() == (
            ROOT / "release" / lesson / f"{lesson}.ipynb").read_bytes()
        # a page, not a run: the notebook's code is shown, never its outputs
        assert 'class="output"' not in text


@pytest.mark.e2e  # one build, about 15 s (Node.js and the course's theme)
def test_no_internal_link_is_broken(built):
    output, _, _ = built
    html = output / "html"
    pages = {}
    for path in html.glob("*.html"):
        parser = Links()
        parser.feed(path.read_text())
        pages[path.name] = parser
    checked = 0
    for name, parser in pages.items():
        for ref in parser.refs:
            parts = urlsplit(ref)
            if parts.scheme in ("http", "https", "mailto") or parts.netloc:
                continue
            assert not parts.scheme, f"{name}: {ref}"
            target = unquote(parts.path) or name
            assert (html / target).is_file(), f"{name}: {ref} points at no file of the site"
            if parts.fragment and target in pages:
                assert parts.fragment in pages[target].ids, f"{name}: {ref}: no such anchor"
            checked += 1
    assert checked > 200
    # the docs pages reach each other and the lessons through the home page's links
    home = pages["index.html"]
    for doc in ("start.html", "grading.html", "checks.html", "site.html", "performance-01.html"):
        assert any(urlsplit(r).path == doc for r in home.refs), doc


@pytest.mark.e2e  # one build, about 15 s (Node.js and the course's theme)
def test_the_build_reached_nothing_but_the_loopback(built):
    output, listener, _ = built
    assert listener.connections == 0, f"the build sent requests through the proxy: {listener.first_bytes}"
    log = (output / "build.log").read_text()
    fetched = re.findall(r"Fetching: (\S+)", log)
    elsewhere = [url for url in fetched if urlsplit(url).hostname not in ("localhost", "127.0.0.1", "::1")]
    assert not elsewhere, f"the engine fetched {elsewhere}"
    assert "api.mystmd.org/templates" not in log and "Fetching template" not in log


@pytest.mark.e2e  # one build, about 15 s (Node.js and the course's theme)
def test_the_site_has_a_search_page_over_every_page(built):
    html, manifest, sources = _pages(built[0])
    assert manifest["search"] == site_theme.SEARCH_PAGE and (html / site_theme.SEARCH_PAGE).is_file()
    index = (html / site_theme.SEARCH_INDEX).read_text()
    assert index.startswith("var SEARCH_PAGES = ")
    entries = json.loads(index[len("var SEARCH_PAGES = "):].rstrip().rstrip(";").replace("<\\/", "</"))
    assert sorted(e["file"] for e in entries) == sorted(p["file"] for p in manifest["pages"])
    lesson = next(e for e in entries if e["file"] == sources["release/performance-01/performance-01.ipynb"]["file"])
    assert "block_until_ready" in lesson["text"] and "<div" not in lesson["text"] and "<span" not in lesson["text"]
    for page in manifest["pages"]:  # a search box on every page, leading to the search page
        assert site_theme.SEARCH_FORM in (html / page["file"]).read_text(), page["file"]
    search = (html / site_theme.SEARCH_PAGE).read_text()
    assert f'src="{site_theme.SEARCH_INDEX}"' in search and "textContent" in search and "innerHTML" not in search


@pytest.mark.e2e  # one build, about 15 s (Node.js and the course's theme)
def test_students_see_the_audit_once_and_no_instructors_note(built):
    html, manifest, sources = _pages(built[0])
    audit = [p for p in manifest["pages"] if "performance-audit" in p["title"].lower()]
    assert [p["source"] for p in audit] == ["release/performance-audit/performance-audit.ipynb"], audit
    for lesson in lessons(ROOT):
        text = (html / sources[f"release/{lesson}/{lesson}.ipynb"]["file"]).read_text()
        assert "course.toml" not in text and "No launch link" not in text, lesson


# Fast checks of the pieces (no build)

def test_the_search_index_holds_words_never_markup():
    # Inline tags join their neighbours as the page shows them ("bold&"); block tags part them.
    assert site_theme.page_text("<p>a <b>bold</b>&amp; <script>x()</script>plan</p>\n<pre>b  c</pre>") == \
        "a bold& plan b c"
    # Highlighted code reads as the page shows it (pygments puts each token in a span of its own).
    code = ('<div class="highlight"><pre><span class="n">jax</span><span class="o">.</span>'
            '<span class="n">block_until_ready</span><span class="p">(</span><span class="n">x</span>'
            '<span class="p">)</span>\n<span class="n">y</span></pre></div><p>then</p><p>more</p>')
    assert site_theme.page_text(code) == "jax.block_until_ready(x) y then more"
    js = site_theme.search_index([{"file": "a.html", "title": "T", "text": "</script><script>alert(1)"}])
    assert "</script>" not in js and js.startswith("var SEARCH_PAGES = [")

def test_broken_links_finds_missing_files_and_anchors(tmp_path):
    (tmp_path / "a.html").write_text('<h2 id="here">x</h2><a href="b.html#gone">b</a><a href="#here">h</a>'
                                     '<img src="build/none.png"><a href="https://example.org/x">out</a>')
    (tmp_path / "b.html").write_text('<p id="there">b</p><a href="a.html#here">a</a>')
    assert site.broken_links(tmp_path) == ["a.html: b.html#gone (no such anchor)", "a.html: build/none.png"]


def _course(tmp_path: Path, toml: str):
    """The settings of a course whose course.toml is `toml`, read as every stage reads them."""
    (tmp_path / "course.toml").write_text(toml)
    return course_settings(tmp_path)


def test_launch_links_come_from_course_toml_only(tmp_path):
    """Every launch link points into the student publication ([publication]), never elsewhere."""
    assert launch.hub_link(_course(tmp_path, '[publication]\nrepository = ""\n[hub]\nurl = "https://hub.example.edu"\n'),
                           "performance-01") is None
    assert launch.hub_link(_course(tmp_path, '[publication]\nrepository = "org/course"\n'), "performance-01") is None
    link = launch.hub_link(_course(tmp_path, '[publication]\nrepository = "org/course"\nbranch = "fall"\n'
                                             '[hub]\nurl = "https://hub.example.edu/"\n'), "performance-01")
    assert link == ("https://hub.example.edu/hub/user-redirect/git-pull?repo=https%3A%2F%2Fgithub.com%2Forg%2Fcourse"
                    "&branch=fall&urlpath=lab%2Ftree%2Fcourse%2Frelease%2Fperformance-01%2Fperformance-01.ipynb")
    text = site._launch_markdown(course_settings(tmp_path), "performance-01")
    assert "[Open in Colab](https://colab.research.google.com/github/org/course/blob/fall/release/" in text
    assert "[Open on the course's JupyterHub](https://hub.example.edu/hub/" in text
    with pytest.raises(site.CourseError, match=r"\[hub\] url"):
        launch.hub_link(_course(tmp_path, '[publication]\nrepository = "org/course"\n[hub]\nurl = "hub.example.edu"\n'),
                        "performance-01")
    with pytest.raises(site.CourseError, match=r"\[colab\] repository is now \[publication\] repository"):
        launch.colab_link(_course(tmp_path, '[colab]\nrepository = "org/course"\n'), "performance-01")


def test_no_lesson_page_tells_students_about_a_missing_launch_link(tmp_path):
    """Without a publication, a lesson page has no links and no note for the instructor: `perfcourse site`
    tells the instructor instead."""
    text = site._launch_markdown(_course(tmp_path, ""), "performance-01")
    assert "course.toml" not in text and "launch link" not in text and "Open in" not in text
    assert "course.toml" in site.missing_links_note(course_settings(tmp_path)) and site.missing_links_note(
        _course(tmp_path, '[publication]\nrepository = "org/course"\n')) is None


def test_key_numbers_read_one_line_values():
    report = {"backend": "cpu", "first_call_seconds": 0.030130456, "samples": [1, 2.5, None],
              "ceilings": {"peak": 2.0e11, "nested": {"deep": 1}}, "long": list(range(20))}
    assert site._key_numbers(json.dumps(report)) == [
        ("backend", "cpu"), ("first_call_seconds", "0.03013"), ("samples", "[1, 2.5, null]"),
        ("ceilings.peak", "2e+11")]
    assert site._key_numbers("Saved residual descriptions: ...") == []


@pytest.mark.e2e  # the built site in Chromium (skipped without it, as the browser tests are)
def test_searching_the_site_in_a_browser_finds_the_lesson(browser, built):  # noqa: F811 (the pytest fixture)
    """The search box of a page leads to search.html, opened from disk: the lesson that teaches
    block_until_ready is among the results, each a link to its page, and nothing is fetched."""
    html, _, sources = _pages(built[0])
    page = browser.new_page()
    outside = []
    page.on("request", lambda request: outside.append(request.url)
            if not request.url.startswith(("file:", "data:")) else None)
    page.goto((html / "index.html").as_uri())
    page.locator("form.search input[name=q]").fill("block_until_ready")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search.html?q=block_until_ready")
    links = page.eval_on_selector_all("#results a", "as => as.map(a => a.getAttribute('href'))")
    assert sources["release/performance-01/performance-01.ipynb"]["file"] in links, links
    assert "page(s) with block_until_ready" in page.locator("#said").inner_text()
    assert outside == []


def test_a_recorded_value_is_never_read_as_markup():
    # A sharded array's type prints as float32[64@fsdp,128]: MyST would read "@fsdp" as a citation.
    assert site._cell_text("float32[64@fsdp,128] | a\nb") == "float32[64&#64;fsdp,128] \\| a b"


@pytest.mark.slow  # writes the book's sources twice (every lesson page): about 1.4 s
def test_the_students_build_holds_their_pages_only_and_no_link_out_of_it(tmp_path):
    """perfcourse site --students (issue 52): the lessons and docs/students/ only; how the hidden
    checks judge, the hostile catalogue and the instructors' commands are not in the book, and every
    link to them (the home page's, a student page's) is its text."""
    book = tmp_path / "book"
    expected = site.write_sources(ROOT, book, students=True)
    assert expected["docs"] and all(page.startswith("docs/students/") for page in expected["docs"]), expected["docs"]
    written = sorted(str(p.relative_to(book)) for p in book.rglob("*.md"))
    assert written == sorted(["README.md", *expected["docs"]]), written
    for page in ["README.md", *expected["docs"]]:
        text = (book / page).read_text(encoding="utf-8")
        assert "instructors/" not in text and "authors/" not in text, f"{page} still links out of the students' build"
    home = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/instructors/grading.md)" in home and "Grading a class" in (book / "README.md").read_text()
    # The instructors' build keeps every page.
    everything = site.write_sources(ROOT, tmp_path / "all")
    assert any(page.startswith("docs/authors/") for page in everything["docs"])
