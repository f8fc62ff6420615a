"""The course site's MyST theme: static HTML pages from the engine's content, with nothing fetched
from elsewhere (`perfcourse site`, site/build.py, writes the template that runs this).

The MyST engine (Jupyter Book 2) parses the book and serves what it made on a loopback content
server; a site template that declares `build.render` renders the site itself. The engine runs that
command with CONTENT_CDN (the content server's address) and BUILD_DIRECTORY (where the HTML goes).
This module reads config.json and each page's content (its MyST AST) from there and writes one HTML
file per page beside a stylesheet: flat files with relative links, so the folder can be served
from any path or opened from disk: search.html finds words in every page's text
(build/search.js, written here; a search box in every page's contents bar leads there). Figures
and the notebooks' downloads are copied into build/.
pages.json lists every page written with its source, and any node type this renderer does not know
(rendered as its children, never dropped silently); the site's test requires none.
"""
from __future__ import annotations

import html
import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import ProxyHandler, build_opener

ASSETS = "build"
# Nodes drawn as their children, with no markup of their own.
TRANSPARENT = {"root", "mystDirective", "mystRole", "include", "embed", "legend", "div", "span"}
SKIPPED = {"comment", "mystTarget", "mystComment"}

STYLE = """
:root { --ink: #1d2329; --muted: #5b6670; --line: #d8dee4; --accent: #1f5f99; --tint: #f4f7fa; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); font: 16px/1.6 system-ui, -apple-system, "Segoe UI", sans-serif; }
a { color: var(--accent); }
.layout { display: flex; min-height: 100vh; }
nav.toc { width: 17rem; flex: none; border-right: 1px solid var(--line); padding: 1.2rem 1rem;
  background: var(--tint); font-size: 0.92rem; position: sticky; top: 0; height: 100vh; overflow-y: auto; }
nav.toc .home { display: block; font-weight: 700; font-size: 1.05rem; margin-bottom: 1rem; text-decoration: none; }
nav.toc .section { margin: 1rem 0 0.3rem; font-weight: 600; color: var(--muted); text-transform: uppercase;
  font-size: 0.75rem; letter-spacing: 0.05em; }
nav.toc a.page { display: block; padding: 0.15rem 0.4rem; text-decoration: none; color: var(--ink);
  border-radius: 4px; }
nav.toc a.page[aria-current] { background: #dde8f3; font-weight: 600; }
main { flex: 1; min-width: 0; padding: 1.5rem 2.5rem 4rem; max-width: 60rem; }
h1 { font-size: 1.9rem; line-height: 1.25; }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 0.7rem 0.9rem;
  overflow-x: auto; font-size: 0.85rem; line-height: 1.45; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; }
:not(pre) > code { background: #eef1f4; padding: 0.05rem 0.25rem; border-radius: 3px; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: 0.35rem 0.6rem; text-align: left; vertical-align: top; }
th { background: var(--tint); }
figure { margin: 1.2rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 0.9rem; }
aside.admonition { border-left: 4px solid var(--accent); background: var(--tint); padding: 0.4rem 1rem;
  margin: 1rem 0; }
aside.admonition.important, aside.admonition.warning { border-left-color: #b5651d; background: #fdf6ee; }
aside.admonition > .title { font-weight: 700; margin: 0.4rem 0; }
details { border: 1px solid var(--line); border-radius: 6px; padding: 0.3rem 0.8rem; margin: 1rem 0; }
summary { cursor: pointer; font-weight: 600; }
.cell { margin: 0.8rem 0; } .cell-label { font-size: 0.75rem; color: var(--muted); }
.pager { display: flex; justify-content: space-between; border-top: 1px solid var(--line); margin-top: 3rem;
  padding-top: 1rem; }
footer { color: var(--muted); font-size: 0.8rem; margin-top: 2rem; }
.downloads { font-size: 0.9rem; }
form.search input { width: 100%; margin: 0.2rem 0 0.6rem; padding: 0.25rem 0.4rem; font: inherit; }
#results li { margin: 0.6rem 0; } #results .snippet { color: var(--muted); font-size: 0.9rem; display: block; }
@media (max-width: 50rem) {
  .layout { display: block; } nav.toc { width: auto; height: auto; position: static; } main { padding: 1rem; }
}
"""


def _opener():
    """The content server is on the loopback: never through a proxy the environment names."""
    return build_opener(ProxyHandler({}))


class Renderer:
    def __init__(self, cdn: str, out: Path, slugs: set[str]):
        self.cdn, self.out, self.slugs = cdn.rstrip("/"), out, slugs
        self.unknown: set[str] = set()
        self.assets: dict[str, str] = {}
        self.page = ""
        self.opener = _opener()

    def fetch(self, path: str) -> bytes:
        with self.opener.open(f"{self.cdn}/{path.lstrip('/')}", timeout=60) as response:
            return response.read()

    def asset(self, url: str, name: str | None = None) -> str:
        """A file the content server holds, copied into build/; its relative address."""
        if url not in self.assets:
            target = name or Path(urlsplit(url).path).name
            (self.out / ASSETS).mkdir(exist_ok=True)
            (self.out / ASSETS / target).write_bytes(self.fetch(urlsplit(url).path))
            self.assets[url] = f"{ASSETS}/{target}"
        return self.assets[url]

    def href(self, url: str) -> str:
        """A link as the static site writes it: pages as <slug>.html, relative."""
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or not parts.path.startswith("/"):
            return url
        slug = parts.path.strip("/") or "index"
        fragment = f"#{parts.fragment}" if parts.fragment else ""
        if slug in self.slugs:
            return ("" if slug == self.page and fragment else f"{slug}.html") + fragment
        return self.asset(url) + fragment  # a file in the site's content (a download)

    def children(self, node: dict) -> str:
        return "".join(self.node(child) for child in node.get("children") or [])

    def node(self, node: dict) -> str:
        kind = node.get("type")
        method = getattr(self, f"n_{kind}", None)
        if method:
            return method(node)
        if kind in SKIPPED:
            return ""
        if kind not in TRANSPARENT:
            self.unknown.add(str(kind))
        return self.children(node)

    # text and inline
    def n_text(self, n): return html.escape(n.get("value", ""))
    def n_emphasis(self, n): return f"<em>{self.children(n)}</em>"
    def n_strong(self, n): return f"<strong>{self.children(n)}</strong>"
    def n_delete(self, n): return f"<del>{self.children(n)}</del>"
    def n_underline(self, n): return f"<u>{self.children(n)}</u>"
    def n_subscript(self, n): return f"<sub>{self.children(n)}</sub>"
    def n_superscript(self, n): return f"<sup>{self.children(n)}</sup>"
    def n_smallcaps(self, n): return f'<span style="font-variant: small-caps">{self.children(n)}</span>'
    def n_abbreviation(self, n): return f'<abbr title="{html.escape(n.get("title", ""))}">{self.children(n)}</abbr>'
    def n_break(self, n): return "<br>"
    def n_inlineCode(self, n): return f"<code>{html.escape(n.get('value', ''))}</code>"
    def n_html(self, n): return n.get("value", "")

    def n_link(self, n):
        return f'<a href="{html.escape(self.href(n.get("url", "")))}">{self.children(n)}</a>'

    def n_crossReference(self, n):
        url = n.get("url") or f"/{self.page}"
        target = self.href(f"{url}#{n.get('html_id') or n.get('identifier', '')}")
        return f'<a href="{html.escape(target)}">{self.children(n) or html.escape(n.get("label", ""))}</a>'

    def _math(self, n, block: bool):
        found = re.search(r"<math.*?</math>", n.get("html", ""), re.S)  # MathML: the browser draws it
        if found:
            mathml = found.group(0)
            return mathml.replace("<math ", '<math display="block" ', 1) if block else mathml
        return f"<code>{html.escape(n.get('value', ''))}</code>"

    def n_inlineMath(self, n): return self._math(n, False)
    def n_math(self, n): return f"<div class=\"math\">{self._math(n, True)}</div>"

    def n_image(self, n):
        src = self.href(n.get("url", "")) if n.get("url", "").startswith("/") else n.get("url", "")
        return f'<img src="{html.escape(src)}" alt="{html.escape(n.get("alt", ""))}" loading="lazy">'

    # blocks
    def n_paragraph(self, n): return f"<p>{self.children(n)}</p>\n"
    def n_blockquote(self, n): return f"<blockquote>{self.children(n)}</blockquote>\n"
    def n_thematicBreak(self, n): return "<hr>\n"

    def n_heading(self, n):
        depth = min(6, max(1, int(n.get("depth", 2))))
        ident = n.get("html_id") or n.get("identifier")
        attr = f' id="{html.escape(ident)}"' if ident else ""
        return f"<h{depth}{attr}>{self.children(n)}</h{depth}>\n"

    def n_list(self, n):
        tag = "ol" if n.get("ordered") else "ul"
        start = f' start="{int(n["start"])}"' if n.get("ordered") and n.get("start", 1) != 1 else ""
        return f"<{tag}{start}>{self.children(n)}</{tag}>\n"

    def n_listItem(self, n): return f"<li>{self.children(n)}</li>\n"

    def n_table(self, n): return f"<table>{self.children(n)}</table>\n"
    def n_tableRow(self, n): return f"<tr>{self.children(n)}</tr>\n"

    def n_tableCell(self, n):
        tag = "th" if n.get("header") else "td"
        return f"<{tag}>{self.children(n)}</{tag}>"

    def n_code(self, n):
        code = n.get("value", "")
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import get_lexer_by_name

            lexer = get_lexer_by_name(n.get("lang") or "text")
        except Exception:  # no such lexer (or no Pygments): the text as it is
            return f"<pre><code>{html.escape(code)}</code></pre>\n"
        return highlight(code, lexer, HtmlFormatter(nowrap=False, cssclass="highlight")) + "\n"

    def n_outputs(self, n): return self.children(n)

    def n_output(self, n):
        data = n.get("jupyter_data") or {}
        if data.get("output_type") == "stream":
            return f"<pre class=\"output\">{html.escape(''.join(data.get('text', '')))}</pre>"
        bundle = data.get("data") or {}
        for mime in ("image/png", "image/svg+xml", "image/jpeg"):
            if mime in bundle and isinstance(bundle[mime], dict) and bundle[mime].get("path"):
                return f'<img src="{html.escape(self.asset(bundle[mime]["path"]))}" alt="output">'
        text = bundle.get("text/plain")
        if isinstance(text, dict):
            text = text.get("content", "")
        return f"<pre class=\"output\">{html.escape(''.join(text or ''))}</pre>" if text else self.children(n)

    def n_block(self, n):
        body = self.children(n)
        ident = n.get("html_id")
        attr = f' id="{html.escape(ident)}"' if ident else ""
        if n.get("kind") == "notebook-code":
            return f'<div class="cell"{attr}><div class="cell-label">code cell</div>{body}</div>\n'
        return f"<div{attr}>{body}</div>\n"

    def n_admonition(self, n):
        kind = html.escape(n.get("kind", "note"))
        return f'<aside class="admonition {kind}">{self.children(n)}</aside>\n'

    def n_admonitionTitle(self, n): return f'<p class="title">{self.children(n)}</p>'

    def n_container(self, n):
        ident = n.get("html_id")
        attr = f' id="{html.escape(ident)}"' if ident else ""
        return f"<figure{attr}>{self.children(n)}</figure>\n"

    def n_caption(self, n):
        inner = self.children(n).replace("<p>", "").replace("</p>\n", " ").replace("</p>", "")
        return f"<figcaption>{inner}</figcaption>"

    def n_details(self, n):
        return f"<details{' open' if n.get('open') else ''}>{self.children(n)}</details>\n"

    def n_summary(self, n): return f"<summary>{self.children(n)}</summary>"

    def n_footnoteReference(self, n):
        ident = html.escape(n.get("identifier", ""))
        return f'<sup><a href="#fn-{ident}" id="fnref-{ident}">{html.escape(str(n.get("enumerator", ident)))}</a></sup>'

    def n_footnoteDefinition(self, n):
        ident = html.escape(n.get("identifier", ""))
        return (f'<div class="footnote" id="fn-{ident}">{html.escape(str(n.get("enumerator", ident)))}. '
                f'{self.children(n)}</div>')


SEARCH_PAGE = "search.html"
SEARCH_INDEX = f"{ASSETS}/search.js"
SEARCH_FORM = (f'<form class="search" action="{SEARCH_PAGE}" role="search"><input type="search" name="q" '
               'placeholder="Search the course" aria-label="Search the course"></form>')
# search.html's own code: the words of ?q= found in the pages of build/search.js (a script, so that
# it loads from disk as well as from a server), the pages with every word first. Results are
# built as text nodes, never as markup.
SEARCH_SCRIPT = """
(function () {
  var query = new URLSearchParams(window.location.search).get("q") || "";
  var box = document.getElementById("q"), list = document.getElementById("results");
  box.value = query;
  var words = query.toLowerCase().split(/\\s+/).filter(function (w) { return w.length > 0; });
  if (!words.length) { return; }
  var found = [];
  SEARCH_PAGES.forEach(function (page) {
    var text = page.text.toLowerCase(), title = page.title.toLowerCase(), score = 0;
    for (var i = 0; i < words.length; i++) {
      var count = text.split(words[i]).length - 1, inTitle = title.indexOf(words[i]) >= 0;
      if (!count && !inTitle) { return; }
      score += count + (inTitle ? 50 : 0);
    }
    found.push({page: page, score: score});
  });
  found.sort(function (a, b) { return b.score - a.score; });
  var said = document.getElementById("said");
  said.textContent = found.length + " page(s) with " + words.join(" and ");
  found.forEach(function (hit) {
    var item = document.createElement("li"), link = document.createElement("a"),
      snippet = document.createElement("span");
    link.href = hit.page.file;
    link.textContent = hit.page.title;
    var at = hit.page.text.toLowerCase().indexOf(words[0]);
    var start = Math.max(0, at - 80);
    snippet.className = "snippet";
    snippet.textContent = at < 0 ? "" : (start ? "..." : "") + hit.page.text.slice(start, at + 160) + "...";
    item.appendChild(link);
    item.appendChild(snippet);
    list.appendChild(item);
  });
})();
"""


# Tags that end a run of words: a space where they stood. Any other tag (a highlighted token's span,
# a link, emphasis) joins its neighbours as the page shows them: `jax.block_until_ready(x)`, never
# `jax . block_until_ready ( x )`.
BLOCK_TAG = re.compile(r"</?(?:p|div|br|hr|li|ul|ol|dl|dt|dd|pre|h[1-6]|table|thead|tbody|tr|td|th|section|article|"
                       r"header|footer|nav|main|aside|blockquote|figure|figcaption|form|img)\b[^>]*>", re.I)


def page_text(body: str) -> str:
    """A page's words for the search index: its HTML without markup, scripts or repeated spaces."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S | re.I)
    text = re.sub(r"<[^>]+>", "", BLOCK_TAG.sub(" ", text))
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def search_index(pages: list[dict]) -> str:
    """build/search.js: SEARCH_PAGES, each page's file, title and text."""
    entries = [{"file": p["file"], "title": p["title"], "text": p["text"]} for p in pages]
    # json.dumps escapes nothing a script tag could end on in a .js file; "</" is split all the same.
    return "var SEARCH_PAGES = " + json.dumps(entries, ensure_ascii=True).replace("</", "<\\/") + ";\n"


def _nav(config: dict, current: str) -> str:
    project = config["projects"][0]
    index = project.get("index", "index")
    parts = [f'<a class="home" href="{index}.html">{html.escape(project.get("title", ""))}</a>', SEARCH_FORM]
    for page in project.get("pages", []):
        if not page.get("slug"):
            parts.append(f'<p class="section">{html.escape(page.get("title", ""))}</p>')
            continue
        here = ' aria-current="page"' if page["slug"] == current else ""
        parts.append(f'<a class="page" href="{page["slug"]}.html"{here}>{html.escape(page.get("title", ""))}</a>')
    return "\n".join(parts)


def _pager(order: list[tuple[str, str]], slug: str) -> str:
    at = [s for s, _ in order].index(slug)
    before = f'<a href="{order[at - 1][0]}.html">← {html.escape(order[at - 1][1])}</a>' if at else "<span></span>"
    after = (f'<a href="{order[at + 1][0]}.html">{html.escape(order[at + 1][1])} →</a>'
             if at + 1 < len(order) else "<span></span>")
    return f'<div class="pager">{before}{after}</div>'


def _document(config: dict, slug: str, title: str, article: str, pager: str) -> str:
    """One HTML page of the site: the contents bar (with the search box) and the article."""
    version = config.get("myst", "")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="{ASSETS}/site.css">
</head>
<body>
<div class="layout">
<nav class="toc" aria-label="Contents">
{_nav(config, slug)}
</nav>
<main>
<article>
{article}
</article>
{pager}
<footer>Built with Jupyter Book (MyST {html.escape(version)}) and the course's own offline theme
(perfcourse.site.theme).</footer>
</main>
</div>
</body>
</html>
"""


def render(cdn: str, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    opener = _opener()
    with opener.open(f"{cdn.rstrip('/')}/config.json", timeout=60) as response:
        config = json.loads(response.read())
    project = config["projects"][0]
    index = project.get("index", "index")
    order = [(index, project.get("title", index))]
    order += [(p["slug"], p.get("title", p["slug"])) for p in project.get("pages", []) if p.get("slug")]
    renderer = Renderer(cdn, out, {slug for slug, _ in order})
    version = config.get("myst", "")
    written, texts = [], {}
    for slug, _ in order:
        content = json.loads(renderer.fetch(f"/content/{slug}.json"))
        front = content.get("frontmatter", {})
        title = front.get("title", slug)
        renderer.page = slug
        body = renderer.node(content["mdast"])
        downloads = [f'<a href="{html.escape(renderer.asset(e["url"], e.get("filename")))}" download>'
                     f'{html.escape(e.get("filename", "download"))}</a>'
                     for e in front.get("exports", []) if e.get("format") == "ipynb" and e.get("url")]
        heading = "" if front.get("content_includes_title") else f"<h1>{html.escape(title)}</h1>"
        extra = f'<p class="downloads">Download the notebook: {", ".join(downloads)}</p>' if downloads else ""
        page_title = title if slug == index else f"{title} · {project.get('title', '')}"
        document = _document(config, slug, page_title, f"{heading}\n{extra}\n{body}", _pager(order, slug))
        (out / f"{slug}.html").write_text(document, encoding="utf-8")
        written.append({"slug": slug, "title": title, "file": f"{slug}.html",
                        "source": content.get("location", "").lstrip("/")})
        texts[slug] = page_text(body)
    try:
        from pygments.formatters import HtmlFormatter

        code_style = HtmlFormatter(style="default").get_style_defs(".highlight")
    except ImportError:
        code_style = ""
    (out / ASSETS).mkdir(exist_ok=True)
    (out / ASSETS / "site.css").write_text(STYLE + code_style, encoding="utf-8")
    (out / SEARCH_INDEX).write_text(search_index([{**p, "text": texts[p["slug"]]} for p in written]), encoding="utf-8")
    search = (f'<h1>Search</h1>\n<form action="{SEARCH_PAGE}" role="search"><input type="search" name="q" id="q" '
              'aria-label="Search the course"> <button type="submit">Search</button></form>\n'
              '<p id="said"></p>\n<ol id="results"></ol>\n'
              '<noscript><p>Search runs in the browser (JavaScript); every page is in the contents.</p></noscript>\n'
              f'<script src="{SEARCH_INDEX}"></script>\n<script>{SEARCH_SCRIPT}</script>')
    (out / SEARCH_PAGE).write_text(_document(config, "", f"Search · {project.get('title', '')}", search, ""),
                                   encoding="utf-8")
    manifest = {"pages": written, "search": SEARCH_PAGE, "assets": sorted(renderer.assets.values()),
                "unrendered_types": sorted(renderer.unknown), "myst": version}
    (out / "pages.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def main() -> int:
    cdn, out = os.environ.get("CONTENT_CDN"), os.environ.get("BUILD_DIRECTORY")
    if not cdn or not out:
        print("perfcourse.site.theme: run by the MyST engine (CONTENT_CDN and BUILD_DIRECTORY unset)", file=sys.stderr)
        return 2
    manifest = render(cdn, Path(out))
    print(f"perfcourse site theme: wrote {len(manifest['pages'])} pages into {out}")
    if manifest["unrendered_types"]:
        print(f"perfcourse site theme: drawn as their children: {', '.join(manifest['unrendered_types'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
