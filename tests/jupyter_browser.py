"""What the browser tests share: Chromium through Playwright, and how JupyterLab, nbgrader's
Assignments panel and Formgrader are driven and read (tests/test_browser.py on one JupyterLab,
tests/test_hub.py on the course's JupyterHub).

Needs Debian's Chromium (`apt-get install chromium`, or PERFCOURSE_CHROMIUM=/path/to/chromium) and
the playwright package (`pip install -r requirements-cpu.txt`). Without them the `browser` fixture
skips its test, except under CI (CI=true), where a missing browser is a failure.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable, NoReturn

import nbformat
import pytest

from conftest import ROOT

CHROMIUM = os.environ.get("PERFCOURSE_CHROMIUM", "/usr/bin/chromium")
# The network is closed on the machines this runs on: nothing in Chromium may try to reach it.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SUCCESS = "Success! Your notebook passes all the tests."  # @jupyter/nbgrader's validation dialog
RESULTS = ROOT / "test-results"

# Bounds on each wait in the page, in seconds.
APP_READY_S = 60       # JupyterLab's page until its menus are there
FORMGRADER_S = 60      # a Formgrader page until its table is filled
RELEASE_S = 60         # Formgrader's Release, Collect, feedback
FETCH_S = 60           # the Assignments panel's list, Fetch, Submit
NOTEBOOK_OPEN_S = 90   # the fetched notebook open with an idle kernel
RUN_ALL_S = 180
VALIDATE_S = 240
AUTOGRADE_S = 240      # Formgrader's Autograde: sandboxed student kernel, then the grading kernel


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str) -> NoReturn:
    """A missing browser skips the test on a laptop and fails it under CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def browser():
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing(f"no Chromium at {CHROMIUM}: install it with `apt-get install chromium` "
                f"(Debian) or point PERFCOURSE_CHROMIUM at a Chromium binary")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None:
        missing("the playwright package is missing: install it with "
                "`pip install -r requirements-cpu.txt`")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(url: str, token: str, method: str = "GET", timeout: float = 5, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"token {token}"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = response.read()
    return json.loads(answer) if answer else None


def write_settings(settings_dir: Path) -> None:
    """JupyterLab user settings: no news or update checks, no toasts, every cell attached to the DOM."""
    overrides = {
        "@jupyterlab/apputils-extension/notification": {
            "fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    }
    for plugin, values in overrides.items():
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def log_tail(path: Path, chars: int = 4000) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-chars:]


def group_alive(pgid: int) -> bool:
    """Whether a process of the group is still running (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def keep_screenshot(page, tmp_path: Path, name: str) -> Path:
    """A screenshot in pytest's tmp_path, copied to <repository>/test-results/."""
    shot = tmp_path / name
    page.screenshot(path=str(shot))
    RESULTS.mkdir(exist_ok=True)
    partial = RESULTS / f".{name}.{os.getpid()}.tmp"
    shutil.copyfile(shot, partial)
    os.replace(partial, RESULTS / name)
    print(f"\nscreenshot: {RESULTS / name} (also {shot})")
    return RESULTS / name


# What the page holds for the notebook: its kernel's status, and per code cell the execution count,
# the prompt on screen, and the error outputs (name, value, and the text the page renders for them).
# JupyterLab renders an error output exactly like a stream on stderr (a `jp-RenderedText` node with
# data-mime-type="application/vnd.jupyter.stderr"), so the DOM alone cannot tell a traceback from a
# warning; the notebook model in the page (window.jupyterapp, see --LabApp.expose_app_in_browser)
# says which outputs are errors, and the DOM gives what the student sees of them.
NOTEBOOK_STATE = """(path) => {
    const app = window.jupyterapp;
    if (!app) return null;
    const panel = [...app.shell.widgets('main')].find(w => w.context && w.context.path === path);
    if (!panel || !panel.content.model || !panel.sessionContext.session) return null;
    const kernel = panel.sessionContext.session.kernel;
    const cells = [];
    panel.content.widgets.forEach((cell, index) => {
        if (cell.model.type !== 'code') return;
        const errors = [];
        const outputs = cell.model.outputs;
        for (let i = 0; i < outputs.length; i++) {
            const output = outputs.get(i).toJSON();
            if (output.output_type !== 'error') continue;
            const shown = cell.node.querySelectorAll('.jp-OutputArea-output')[i];
            errors.push({ename: output.ename, evalue: output.evalue,
                         shown: shown ? shown.innerText.slice(0, 3000) : '(not rendered)',
                         mime: shown ? shown.getAttribute('data-mime-type') : null});
        }
        const prompt = cell.node.querySelector('.jp-InputArea-prompt');
        cells.push({index, count: cell.model.executionCount,
                    prompt: prompt ? prompt.textContent.trim() : '', errors});
    });
    return {kernel: kernel ? kernel.status : 'none', dirty: panel.context.model.dirty, cells};
}"""

# What the student or instructor sees now: the current main-area tab (for Formgrader, the page in its
# iframe) and any dialog open over it.
PAGE_TEXT = """() => {
    const parts = [];
    const app = window.jupyterapp;
    const current = app && app.shell.currentWidget;
    if (current) {
        parts.push('[tab: ' + current.title.label + ']');
        const frame = current.node.querySelector('iframe');
        const body = frame && frame.contentDocument && frame.contentDocument.body;
        parts.push(body ? body.innerText : current.node.innerText);
    }
    document.querySelectorAll('.jp-Dialog').forEach(d => parts.push('[dialog] ' + d.innerText));
    return parts.join('\\n');
}"""


def page_text(page, chars: int = 4000) -> str:
    try:
        text = page.evaluate(PAGE_TEXT)
    except Exception as exc:  # noqa: BLE001 - a closed page still deserves a message
        return f"(the page could not be read: {exc})"
    text = re.sub(r"\n\s*\n+", "\n", text or "").strip()
    return text if len(text) <= chars else "...\n" + text[-chars:]


def notebook_state(page, path: str) -> dict | None:
    return page.evaluate(NOTEBOOK_STATE, path)


def wait_for_state(page, path: str, done, what: str, timeout_s: float) -> dict:
    """Poll the page until done(state) holds; fail saying what was awaited and the last state."""
    deadline = time.monotonic() + timeout_s
    state = None
    while time.monotonic() < deadline:
        state = notebook_state(page, path)
        if state is not None and done(state):
            return state
        page.wait_for_timeout(250)
    raise AssertionError(f"{what}: not reached after {timeout_s} s; last state seen: {json.dumps(state)}")


def finished(state: dict) -> bool:
    """Run All is over: the kernel is idle and every code cell ran, or a cell failed and the rest stopped."""
    if state["kernel"] != "idle" or any(c["prompt"] == "[*]:" for c in state["cells"]):
        return False
    return all(c["count"] for c in state["cells"]) or any(c["errors"] for c in state["cells"])


def wait_kernel_idle(server: str, token: str, path: str, timeout_s: float) -> None:
    """The notebook's kernel, seen from the Jupyter server at `server`, is idle (not starting, not busy)."""
    deadline = time.monotonic() + timeout_s
    states = []
    while time.monotonic() < deadline:
        sessions = [s for s in api(f"{server}/api/sessions", token) if s.get("path") == path]
        states = [s["kernel"]["execution_state"] for s in sessions if s.get("kernel")]
        if states and all(state == "idle" for state in states):
            return
        time.sleep(0.25)
    raise AssertionError(f"the notebook's kernel is not idle after {timeout_s} s: {states}")


def exact(text: str) -> re.Pattern:
    return re.compile(rf"^\s*{re.escape(text)}\s*$")


def menu(page, title: str, item: str) -> None:
    """Open a menu of JupyterLab's menu bar and choose an item by its exact label."""
    page.locator(".lm-MenuBar-itemLabel").filter(has_text=exact(title)).first.click()
    page.locator(".lm-Menu-itemLabel").filter(has_text=exact(item)).first.click()


def formgrader(page):
    """The page inside Formgrader's tab (@jupyter/nbgrader shows it in an iframe, #formgrader-iframe)."""
    return page.frame_locator("#formgrader-iframe iframe")


def formgrader_row(frame, cell: str, text: str):
    """The row of Formgrader's table whose `cell` column reads `text`."""
    return frame.locator("#main-table tr").filter(has=frame.locator(f"td.{cell}").filter(has_text=exact(text)))


def formgrader_result(frame, what: str, timeout_s: float) -> str:
    """Wait for the dialog Formgrader opens when an action ends, close it, and return its text.

    Formgrader's buttons post to its API and open #success-modal or #error-modal (with nbgrader's log
    and traceback) when the answer comes; an error fails the test with that dialog's text.
    """
    modal = frame.locator("#success-modal, #error-modal").first
    modal.wait_for(state="visible", timeout=timeout_s * 1000)
    ok = modal.get_attribute("id") == "success-modal"
    text = modal.locator(".modal-body").inner_text()
    modal.locator(".modal-footer button").filter(has_text=exact("OK")).click()
    modal.wait_for(state="detached", timeout=10_000)
    if not ok:
        raise AssertionError(f"{what}: Formgrader reported an error:\n{text}")
    return text


def solved(fetched: nbformat.NotebookNode, solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The fetched notebook with its solution cells written as the sample solution has them."""
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in solution.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    filled = 0
    for cell in fetched.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
            filled += 1
    assert filled == len(answers), f"filled {filled} of the {len(answers)} solution cells"
    return fetched



def contents_url(server: str, path: str) -> str:
    return f"{server}/api/contents/{urllib.parse.quote(path)}"


@contextlib.contextmanager
def step(name: str, page, current: list[str]):
    """Name the step a failure happened in, and say what the page showed then."""
    current[0] = name
    started = time.monotonic()
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - re-raised with the step and the page's text
        raise AssertionError(f"step '{name}' failed after {time.monotonic() - started:.0f} s: "
                             f"{exc}\n\nthe page showed:\n{page_text(page)}") from exc
    print(f"\n{name}: {time.monotonic() - started:.1f} s")


def new_page(browser):
    """A fresh browser context and its page, with the walks' viewport and default wait."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    return context, page


def open_app(page, url: str) -> None:
    """JupyterLab's page with nbgrader's menu."""
    page.goto(url, wait_until="domcontentloaded", timeout=APP_READY_S * 1000)
    try:
        page.locator(".lm-MenuBar-itemLabel").filter(has_text=exact("Nbgrader")).wait_for(
            timeout=APP_READY_S * 1000)
    except Exception as exc:  # noqa: BLE001 - say what is missing, not only that a wait timed out
        raise AssertionError("no Nbgrader menu: nbgrader's lab extension (@jupyter/nbgrader) "
                             "did not load") from exc


def run_save_validate(page, fetched_item, lesson: str, path: str, expected_cells: int,
                      kernel_idle: Callable[[], None], on_disk: Path,
                      validated: Callable[[], None]) -> nbformat.NotebookNode:
    """A student's work on a fetched notebook, in the page: open it from the Assignments panel's
    entry `fetched_item`, Run > Run All Cells (no cell may show an error), save (Ctrl+S), then the
    toolbar's Validate, which must pass; `validated()` runs while the result is on screen (a
    screenshot). `kernel_idle()` waits until the server sees the notebook's kernel idle. Returns
    the notebook as saved at `on_disk`."""
    fetched_item.locator("a.assignment-notebooks-link").click()
    fetched_item.locator(".nested_list_item a").filter(has_text=exact(lesson)).click()
    wait_for_state(page, path, lambda s: s["kernel"] == "idle" and len(s["cells"]) == expected_cells,
                   "the notebook open with an idle kernel", timeout_s=NOTEBOOK_OPEN_S)
    kernel_idle()
    validate = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button")
    try:
        validate.get_by_text("Validate", exact=True).wait_for(timeout=30_000)
    except Exception as exc:  # noqa: BLE001 - say what is missing, not only that a wait timed out
        raise AssertionError("no Validate button in the notebook toolbar: "
                             "nbgrader's lab extension (@jupyter/nbgrader) did not load") from exc

    menu(page, "Run", "Run All Cells")
    state = wait_for_state(page, path, finished, "Run All Cells finished", timeout_s=RUN_ALL_S)
    failed = [c for c in state["cells"] if c["errors"]]
    assert not failed, "cells show errors:\n" + "\n---\n".join(
        f"code cell {c['index']}: {e['ename']}: {e['evalue']}\n{e['shown']}"
        for c in failed for e in c["errors"])
    # Every code cell ran: its model has a count, shown as its prompt unless the input is collapsed
    # (the figure_code cell's source is hidden, and JupyterLab then renders no prompt).
    assert all(c["count"] and c["prompt"] in (f"[{c['count']}]:", "") for c in state["cells"]), state["cells"]
    kernel_idle()

    # Save (Ctrl+S) and wait until the page says nothing is unsaved.
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    wait_for_state(page, path, lambda s: not s["dirty"], "the notebook saved", timeout_s=30)
    saved = nbformat.read(on_disk, 4)
    assert all(c.execution_count for c in saved.cells if c.cell_type == "code"), "saved without outputs"

    validate.get_by_text("Validate", exact=True).click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=VALIDATE_S * 1000)
    text = dialog.locator(".jp-Dialog-content").inner_text()
    assert "Validation Results" in text, text
    assert SUCCESS in text, f"nbgrader's validation did not pass:\n{text}"
    assert dialog.locator(".validation-success").count() == 1
    validated()
    dialog.get_by_role("button", name="Ok").click()
    dialog.wait_for(state="detached")
    return saved


# --- nbgrader's actions, as an instructor and a student take them in the page ---------------------
def formgrader_release(page, lesson: str) -> None:
    """Nbgrader > Formgrader, then Release on the lesson's row (a draft until then)."""
    menu(page, "Nbgrader", "Formgrader")
    frame = formgrader(page)
    row = formgrader_row(frame, "name", lesson)
    row.wait_for(timeout=FORMGRADER_S * 1000)
    assert row.locator("td.status").inner_text().strip() == "draft", row.inner_text()
    release = row.locator("td.release a:has(.glyphicon-cloud-upload)")
    assert release.count() == 1, ("no Release button for the lesson (Formgrader offers none while "
                                  f"the exchange is missing): {row.inner_text()}")
    release.click()
    text = formgrader_result(frame, "Release", RELEASE_S)
    assert f"Successfully released '{lesson}'" in text, text
    row.locator("td.status").filter(has_text=exact("released")).wait_for(timeout=10_000)


def formgrader_collect(page, lesson: str, submissions: int):
    """Nbgrader > Formgrader, Collect on the lesson's row, then its submissions page; returns Formgrader's frame."""
    menu(page, "Nbgrader", "Formgrader")
    frame = formgrader(page)
    row = formgrader_row(frame, "name", lesson)
    row.locator("td.collect a:has(.glyphicon-cloud-download)").click()
    text = formgrader_result(frame, "Collect", RELEASE_S)
    assert f"Successfully collected submissions of '{lesson}'" in text, text
    count = row.locator("td.num-submissions a").filter(has_text=exact(str(submissions)))
    count.wait_for(timeout=10_000)
    count.click()  # -> the lesson's submissions page
    return frame


def formgrader_autograde(frame, lesson: str, student: str, score: float, full: float) -> None:
    """Autograde on the student's row of the submissions page, which must then show score / full."""
    student_row = formgrader_row(frame, "student-id", student)
    student_row.wait_for(timeout=FORMGRADER_S * 1000)
    status = student_row.locator("td.status").inner_text().strip()
    assert status == "needs autograding", status
    student_row.locator("td.autograde a").click()
    text = formgrader_result(frame, "Autograde", AUTOGRADE_S)
    assert f"Successfully autograded '{lesson}' for student '{student}'" in text, text
    student_row.locator("td.status").filter(has_text=exact("graded")).wait_for(timeout=10_000)
    shown = student_row.locator("td.score").inner_text().strip()
    assert shown == f"{score:g} / {full:g}", f"Formgrader shows {student}'s score as {shown!r}"


def fetch(page, lesson: str, course_id: str):
    """Nbgrader > Assignment List, Fetch on the lesson; returns its entry among the fetched ones."""
    menu(page, "Nbgrader", "Assignment List")
    item = page.locator("#released_assignments_list > .list_item").filter(has_text=lesson)
    button = item.locator("button").filter(has_text=exact("Fetch"))
    button.wait_for(timeout=FETCH_S * 1000)
    assert course_id in item.inner_text(), item.inner_text()
    button.click()
    fetched = page.locator("#fetched_assignments_list > .list_item").filter(has_text=lesson)
    fetched.locator("button").filter(has_text=exact("Submit")).wait_for(timeout=FETCH_S * 1000)
    return fetched


def submit(page, fetched_item, lesson: str) -> None:
    """Nbgrader > Assignment List, Submit on the fetched lesson, which nbgrader must accept."""
    menu(page, "Nbgrader", "Assignment List")
    fetched_item.locator("button").filter(has_text=exact("Submit")).click()
    submitted = page.locator("#submitted_assignments_list > .list_item").filter(has_text=lesson)
    refused = page.locator(".jp-Dialog").filter(has_text="Invalid Submission")
    submitted.or_(refused).first.wait_for(timeout=FETCH_S * 1000)
    assert refused.count() == 0, f"nbgrader refused the submission:\n{refused.inner_text()}"
