"""JupyterLab in a real browser: one lesson's whole nbgrader round trip, through the exchange.

The test copies the course into a scratch directory, generates performance-01 there with the
course's own tool (`perfcourse release`, which also records the lesson in the gradebook), starts
JupyterLab on it through `make lab` (the Makefile's own recipe; the machines this runs on run it
as root, so this also proves the recipe passes `--allow-root`), and drives headless Chromium
through Playwright, as an instructor and a student would, on one machine:

1. the instructor opens Nbgrader > Formgrader and presses Release for performance-01, which puts
   it in the course's exchange (grader_config.py: `Exchange.root` is the course's exchange/);
2. the student opens Nbgrader > Assignment List and presses Fetch, which writes
   performance-01/performance-01.ipynb (nbgrader's default `Exchange.path_includes_course =
   False`); the test checks that the fetched notebook is the release, fills in the solution cells
   (writing the notebook through the Jupyter contents API), opens it from the Assignments panel,
   runs Run > Run All Cells, checks that no cell shows an error, saves, and presses the toolbar's
   Validate button, which must pass;
3. the student presses Submit in the Assignments panel (exchange/<course>/inbound/);
4. the instructor presses Collect in Formgrader (submitted/<user>/performance-01/), opens the
   submissions page and presses Autograde for the student (the Unix user name), which grades it
   with the course's grader_config.py: sandboxed student kernel, trusted grading kernel;
5. the submissions page shows the full score, 8 / 8 (the lesson's solutions earn every point),
   and the gradebook says the same, cell by cell.

Every step leaves a screenshot in test-results/ (roundtrip-1-released.png ...); a failure leaves
roundtrip-failure.png, names the step that failed and what the page showed, and prints the
browser's console errors and the tail of JupyterLab's log.

Needs Debian's Chromium (`apt-get install chromium`, or PERFCOURSE_CHROMIUM=/path/to/chromium),
the playwright package (`pip install -r requirements-cpu.txt`) and make. Without Chromium or
playwright the test is skipped, except under CI (CI=true), where a missing browser is a failure.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import NoReturn

import nbformat
import pytest

from conftest import ROOT, copy_course

from perfcourse import kernels, nbgrader_bridge, samples
from perfcourse.release import released

pytestmark = pytest.mark.e2e

LESSON = "performance-01"
# Where nbgrader's Fetch puts the lesson: <notebook dir>/<lesson>/ (Exchange.path_includes_course = False).
NOTEBOOK = f"{LESSON}/{LESSON}.ipynb"
CHROMIUM = os.environ.get("PERFCOURSE_CHROMIUM", "/usr/bin/chromium")
# The network is closed on the machines this runs on: nothing in Chromium may try to reach it.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SUCCESS = "Success! Your notebook passes all the tests."  # @jupyter/nbgrader's validation dialog
FAILURE_SCREENSHOT = "roundtrip-failure.png"
RESULTS = ROOT / "test-results"

# Bounds on each wait, in seconds.
SETUP_S = 120          # `perfcourse release --lesson performance-01` in the scratch course
SERVER_START_S = 90    # `make lab` until the server answers
APP_READY_S = 60       # JupyterLab's page until its menus are there
FORMGRADER_S = 60      # a Formgrader page until its table is filled
RELEASE_S = 60         # Formgrader's Release, Collect
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


class Lab:
    def __init__(self, url: str, token: str, course: Path, log: Path):
        self.url, self.token, self.course, self.log = url, token, course, log

    def page_url(self, path: str = "") -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}" if path else f"{self.url}/lab?token={self.token}"

    def contents(self, path: str) -> str:
        return f"{self.url}/api/contents/{urllib.parse.quote(path)}"


@pytest.fixture
def lab(tmp_path):
    """`make lab` on a scratch course where performance-01 is generated, stopped at the end whatever happens."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed: the test starts JupyterLab with `make lab`")
    course = copy_course(tmp_path / "course")
    # The instructor's set-up before the server starts: generate the lesson (release/ and the
    # gradebook's record of its cells) with the course's own tool...
    setup = subprocess.run([sys.executable, "-m", "perfcourse.cli", "release", "--lesson", LESSON],
                           cwd=course, text=True, capture_output=True, timeout=SETUP_S)
    assert setup.returncode == 0, (f"set-up: `perfcourse release --lesson {LESSON}` exited "
                                   f"{setup.returncode}:\n{setup.stdout}\n{setup.stderr}")
    # ...and create the exchange, as nbgrader's "Setting up the exchange" asks. Formgrader offers no
    # Release button while Exchange.root does not exist (NbGraderAPI.exchange_missing), and nothing
    # of the course creates it before the first `nbgrader release_assignment`.
    exchange = Path(nbgrader_bridge.config(course).Exchange.root)
    assert exchange == course / "exchange", f"grader_config.py's Exchange.root is {exchange}"
    exchange.mkdir()

    # A scratch Jupyter: its own config, data (nbgrader's submission cache lives there), runtime,
    # settings and workspaces, and the jax-cpu kernel (the kernel nbgrader validates and grades on,
    # grader_config.py) installed beside this Python's kernels.
    jupyter = tmp_path / "jupyter"
    data = jupyter / "share" / "jupyter"
    kernels.install(kernels.DEFAULT, prefix=jupyter)  # -> jupyter/share/jupyter/kernels/jax-cpu
    write_settings(jupyter / "settings")
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ,
               PATH=os.pathsep.join([bindir, os.environ.get("PATH", "")]),
               JUPYTER_PATH=os.pathsep.join([str(data), os.environ.get("JUPYTER_PATH", "")]).rstrip(os.pathsep),
               JUPYTER_CONFIG_DIR=str(jupyter / "config"),
               JUPYTER_DATA_DIR=str(jupyter / "data"),
               JUPYTER_RUNTIME_DIR=str(jupyter / "runtime"),
               IPYTHONDIR=str(jupyter / "ipython"),
               PYTHONUNBUFFERED="1")
    for name in ("JUPYTER_TOKEN", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # nothing of an outer make or server
        env.pop(name, None)

    port, token = free_port(), secrets.token_hex(16)
    lab_args = ["--no-browser",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                "--LabApp.news_url=None", "--LabApp.expose_app_in_browser=True",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                f"--LabApp.user_settings_dir={jupyter / 'settings'}",
                f"--LabApp.workspaces_dir={jupyter / 'workspaces'}"]
    # The Makefile's own recipe, without its environment set-up (STAMP=), on this environment's
    # tools, run in the course: it serves its working directory (--notebook-dir=., which JupyterLab
    # refuses to have twice, so no root_dir here) and adds --allow-root by itself when run as root.
    command = ["make", "--no-print-directory", "-f", str(ROOT / "Makefile"), "lab",
               "STAMP=", f"BIN={bindir}", f"LAB_ARGS={shlex.join(lab_args)}"]
    log = tmp_path / "jupyterlab.log"
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"`make lab` exited with {server.returncode} before JupyterLab answered:\n{log_tail(log)}")
            try:
                api(f"{url}/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer on {url} within {SERVER_START_S} s:\n{log_tail(log)}")
                time.sleep(0.25)
        specs = api(f"{url}/api/kernelspecs", token)["kernelspecs"]
        assert {"python3", "jax-cpu"} <= set(specs), f"kernels the server offers: {sorted(specs)}"
        top = {item["name"] for item in api(f"{url}/api/contents/", token)["content"]}
        assert {"grader_config.py", "release", "exchange"} <= top, \
            f"`make lab` does not serve the course: {sorted(top)}"
        yield Lab(url, token, course, log)
    finally:
        stop(server, url, token)


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


def stop(server: subprocess.Popen, url: str, token: str) -> None:
    """Stop JupyterLab through its API (kernels first), then end what is left of the process group.

    The group is make, the recipe's shell and JupyterLab: once JupyterLab exits, the shell and make
    follow on their own and each reaps its child. Signalling the group instead would kill make
    first and leave JupyterLab to finish on its own, orphaned, so signals are the fallback only.
    """
    if server.poll() is None:
        try:
            api(f"{url}/api/shutdown", token, method="POST", timeout=30)
        except (urllib.error.URLError, OSError, ValueError):
            pass  # the server may stop before it answers
    for sig, wait in ((None, 20), (signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        if sig is not None:
            try:
                os.killpg(server.pid, sig)
            except ProcessLookupError:
                break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            server.poll()  # reap make, so that it does not count as running
            if not group_alive(server.pid):
                break
            time.sleep(0.1)
        else:
            continue
        break
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


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


def notebook_state(page) -> dict | None:
    return page.evaluate(NOTEBOOK_STATE, NOTEBOOK)


def wait_for_state(page, done, what: str, timeout_s: float) -> dict:
    """Poll the page until done(state) holds; fail saying what was awaited and the last state."""
    deadline = time.monotonic() + timeout_s
    state = None
    while time.monotonic() < deadline:
        state = notebook_state(page)
        if state is not None and done(state):
            return state
        page.wait_for_timeout(250)
    raise AssertionError(f"{what}: not reached after {timeout_s} s; last state seen: {json.dumps(state)}")


def finished(state: dict) -> bool:
    """Run All is over: the kernel is idle and every code cell ran, or a cell failed and the rest stopped."""
    if state["kernel"] != "idle" or any(c["prompt"] == "[*]:" for c in state["cells"]):
        return False
    return all(c["count"] for c in state["cells"]) or any(c["errors"] for c in state["cells"])


def wait_kernel_idle(lab: Lab, timeout_s: float) -> None:
    """The notebook's kernel, seen from the server, is idle (not starting, not busy)."""
    deadline = time.monotonic() + timeout_s
    states = []
    while time.monotonic() < deadline:
        sessions = [s for s in api(f"{lab.url}/api/sessions", lab.token) if s.get("path") == NOTEBOOK]
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


def student_id() -> str:
    """The student id nbgrader's exchange gives this user (the Unix user name)."""
    from nbgrader.utils import get_username

    return get_username()


def test_lesson_round_trip_through_the_exchange(browser, lab, tmp_path):
    course = lab.course
    student = student_id()
    course_id = nbgrader_bridge.coursedir(course).course_id
    sample = samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON)
    full_marks = sum(sample.expected.values())
    inbound = course / "exchange" / course_id / "inbound"

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    console = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}") if msg.type == "error" else None)
    current = ["opening JupyterLab"]

    @contextlib.contextmanager
    def step(name: str):
        """Name the step a failure happened in, and say what the page showed then."""
        current[0] = name
        started = time.monotonic()
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - re-raised with the step and the page's text
            raise AssertionError(f"round trip, step '{name}' failed after {time.monotonic() - started:.0f} s: "
                                 f"{exc}\n\nthe page showed:\n{page_text(page)}") from exc
        print(f"\n{name}: {time.monotonic() - started:.1f} s")

    try:
        with step("open JupyterLab"):
            page.goto(lab.page_url(), wait_until="domcontentloaded", timeout=APP_READY_S * 1000)
            try:
                page.locator(".lm-MenuBar-itemLabel").filter(has_text=exact("Nbgrader")).wait_for(
                    timeout=APP_READY_S * 1000)
            except Exception as exc:  # noqa: BLE001 - say what is missing, not only that a wait timed out
                raise AssertionError("no Nbgrader menu: nbgrader's lab extension (@jupyter/nbgrader) "
                                     "did not load") from exc

        with step("1. instructor: Formgrader > Release"):
            menu(page, "Nbgrader", "Formgrader")
            frame = formgrader(page)
            row = formgrader_row(frame, "name", LESSON)
            row.wait_for(timeout=FORMGRADER_S * 1000)
            assert row.locator("td.status").inner_text().strip() == "draft", row.inner_text()
            release = row.locator("td.release a:has(.glyphicon-cloud-upload)")
            assert release.count() == 1, ("no Release button for the lesson (Formgrader offers none while "
                                          f"the exchange is missing): {row.inner_text()}")
            release.click()
            text = formgrader_result(frame, "Release", RELEASE_S)
            assert f"Successfully released '{LESSON}'" in text, text
            row.locator("td.status").filter(has_text=exact("released")).wait_for(timeout=10_000)
            outbound = course / "exchange" / course_id / "outbound" / LESSON / f"{LESSON}.ipynb"
            assert outbound.is_file(), f"Release put nothing at {outbound}"
            keep_screenshot(page, tmp_path, "roundtrip-1-released.png")

        with step("2. student: Assignment List > Fetch"):
            menu(page, "Nbgrader", "Assignment List")
            item = page.locator("#released_assignments_list > .list_item").filter(has_text=LESSON)
            fetch = item.locator("button").filter(has_text=exact("Fetch"))
            fetch.wait_for(timeout=FETCH_S * 1000)
            assert course_id in item.inner_text(), item.inner_text()
            fetch.click()
            fetched_item = page.locator("#fetched_assignments_list > .list_item").filter(has_text=LESSON)
            submit = fetched_item.locator("button").filter(has_text=exact("Submit"))
            submit.wait_for(timeout=FETCH_S * 1000)
            assert (course / NOTEBOOK).is_file(), f"Fetch wrote no {NOTEBOOK} in the notebook directory"
            keep_screenshot(page, tmp_path, "roundtrip-2-fetched.png")

        with step("3. student: solve, Run All, save, Validate"):
            # What the student fetched is what the instructor released.
            fetched = nbformat.from_dict(api(lab.contents(NOTEBOOK) + "?content=1", lab.token)["content"])
            release_nb = nbformat.read(released(course, LESSON), 4)
            assert [(c.cell_type, c.source) for c in fetched.cells] == \
                [(c.cell_type, c.source) for c in release_nb.cells], "the fetched notebook is not the release"
            answer = solved(fetched, samples.build(course, sample))
            api(lab.contents(NOTEBOOK), lab.token, method="PUT", timeout=30,
                body={"type": "notebook", "format": "json", "content": answer})

            # Open it from the Assignments panel: the fetched lesson's notebook list, then the notebook.
            fetched_item.locator("a.assignment-notebooks-link").click()
            fetched_item.locator(".nested_list_item a").filter(has_text=exact(LESSON)).click()
            expected = sum(c.cell_type == "code" for c in answer.cells)
            wait_for_state(page, lambda s: s["kernel"] == "idle" and len(s["cells"]) == expected,
                           "the notebook open with an idle kernel", timeout_s=NOTEBOOK_OPEN_S)
            wait_kernel_idle(lab, timeout_s=30)
            validate = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button")
            try:
                validate.get_by_text("Validate", exact=True).wait_for(timeout=30_000)
            except Exception as exc:  # noqa: BLE001 - say what is missing, not only that a wait timed out
                raise AssertionError("no Validate button in the notebook toolbar: "
                                     "nbgrader's lab extension (@jupyter/nbgrader) did not load") from exc

            menu(page, "Run", "Run All Cells")
            state = wait_for_state(page, finished, "Run All Cells finished", timeout_s=RUN_ALL_S)
            failed = [c for c in state["cells"] if c["errors"]]
            assert not failed, "cells show errors:\n" + "\n---\n".join(
                f"code cell {c['index']}: {e['ename']}: {e['evalue']}\n{e['shown']}"
                for c in failed for e in c["errors"])
            assert all(re.fullmatch(r"\[\d+\]:", c["prompt"]) for c in state["cells"]), state["cells"]
            wait_kernel_idle(lab, timeout_s=30)

            # Save (Ctrl+S) and wait until the page says nothing is unsaved.
            page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.click(position={"x": 5, "y": 5})
            page.keyboard.press("Control+s")
            wait_for_state(page, lambda s: not s["dirty"], "the notebook saved", timeout_s=30)
            saved = nbformat.read(course / NOTEBOOK, 4)
            assert all(c.execution_count for c in saved.cells if c.cell_type == "code"), "saved without outputs"

            validate.get_by_text("Validate", exact=True).click()
            dialog = page.locator(".jp-Dialog")
            dialog.wait_for(timeout=VALIDATE_S * 1000)
            text = dialog.locator(".jp-Dialog-content").inner_text()
            assert "Validation Results" in text, text
            assert SUCCESS in text, f"nbgrader's validation did not pass:\n{text}"
            assert dialog.locator(".validation-success").count() == 1
            keep_screenshot(page, tmp_path, "roundtrip-3-validated.png")
            dialog.get_by_role("button", name="Ok").click()
            dialog.wait_for(state="detached")

        with step("4. student: Assignment List > Submit"):
            menu(page, "Nbgrader", "Assignment List")
            submit.click()
            submitted_item = page.locator("#submitted_assignments_list > .list_item").filter(has_text=LESSON)
            refused = page.locator(".jp-Dialog").filter(has_text="Invalid Submission")
            submitted_item.or_(refused).first.wait_for(timeout=FETCH_S * 1000)
            assert refused.count() == 0, f"nbgrader refused the submission:\n{refused.inner_text()}"
            submissions = sorted(inbound.glob(f"{student}+{LESSON}+*"))
            assert len(submissions) == 1, f"in {inbound}: {sorted(p.name for p in inbound.iterdir())}"
            assert (submissions[0] / f"{LESSON}.ipynb").is_file(), sorted(submissions[0].iterdir())
            keep_screenshot(page, tmp_path, "roundtrip-4-submitted.png")

        with step("5. instructor: Formgrader > Collect"):
            menu(page, "Nbgrader", "Formgrader")
            frame = formgrader(page)
            row = formgrader_row(frame, "name", LESSON)
            row.locator("td.collect a:has(.glyphicon-cloud-download)").click()
            text = formgrader_result(frame, "Collect", RELEASE_S)
            assert f"Successfully collected submissions of '{LESSON}'" in text, text
            collected = nbgrader_bridge.folder(course, "submitted", student, LESSON) / f"{LESSON}.ipynb"
            assert collected.is_file(), f"Collect put nothing at {collected}"
            assert [c.source for c in nbformat.read(collected, 4).cells] == [c.source for c in saved.cells], \
                "the collected notebook is not the one the student saved"
            count = row.locator("td.num-submissions a").filter(has_text=exact("1"))
            count.wait_for(timeout=10_000)
            count.click()  # -> the lesson's submissions page
            student_row = formgrader_row(frame, "student-id", student)
            student_row.wait_for(timeout=FORMGRADER_S * 1000)
            status = student_row.locator("td.status").inner_text().strip()
            assert status == "needs autograding", status
            keep_screenshot(page, tmp_path, "roundtrip-5-collected.png")

        with step("6. instructor: Formgrader > Autograde"):
            student_row.locator("td.autograde a").click()
            text = formgrader_result(frame, "Autograde", AUTOGRADE_S)
            assert f"Successfully autograded '{LESSON}' for student '{student}'" in text, text
            student_row.locator("td.status").filter(has_text=exact("graded")).wait_for(timeout=10_000)
            shown = student_row.locator("td.score").inner_text().strip()
            assert shown == f"{full_marks:g} / {full_marks:g}", f"Formgrader shows the score {shown!r}"
            keep_screenshot(page, tmp_path, "roundtrip-6-autograded.png")

        with step("7. the gradebook's score"):
            score = nbgrader_bridge.notebook_score(course, LESSON, student)
            assert score is not None, f"the gradebook has no {LESSON} notebook for {student}"
            assert (score.score, score.max_score) == (full_marks, full_marks) == (8.0, 8.0), score
            assert score.cells == sample.expected, score.cells
        (RESULTS / FAILURE_SCREENSHOT).unlink(missing_ok=True)  # a failed run's, now out of date
    except BaseException:
        try:
            keep_screenshot(page, tmp_path, FAILURE_SCREENSHOT)
        except Exception:  # noqa: BLE001 - the original failure matters more
            pass
        print(f"\nfailed in: {current[0]}")
        print("\nbrowser console errors:\n" + "\n".join(console[-20:]))
        print("\nJupyterLab log:\n" + log_tail(lab.log))
        raise
    finally:
        context.close()
