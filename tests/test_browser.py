"""JupyterLab in a real browser: a student runs a solved lesson and nbgrader's Validate button passes it.

The test copies the course into a scratch directory, starts JupyterLab on it (with nbgrader's lab
extension and server extensions, reading the course's nbgrader_config.py), and drives Chromium
headless through Playwright: open a release notebook filled with the solutions, Run > Run All
Cells, check that no cell shows an error, save, press Validate and read nbgrader's verdict.

Needs Debian's Chromium (`apt-get install chromium`, or PERFCOURSE_CHROMIUM=/path/to/chromium)
and the playwright package (`pip install -r requirements-cpu.txt`). Without them the test is
skipped, except under CI (CI=true), where a missing browser is a failure.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NoReturn

import nbformat
import pytest

from conftest import ROOT, copy_course

from perfcourse import kernels, samples

LESSON = "performance-01"
NOTEBOOK = f"student/{LESSON}.ipynb"
CHROMIUM = os.environ.get("PERFCOURSE_CHROMIUM", "/usr/bin/chromium")
# The network is closed on the machines this runs on: nothing in Chromium may try to reach it.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SUCCESS = "Success! Your notebook passes all the tests."  # @jupyter/nbgrader's validation dialog
SCREENSHOT = "jupyterlab-validate.png"
FAILURE_SCREENSHOT = "jupyterlab-failure.png"
RESULTS = ROOT / "test-results"

SERVER_START_S = 90
RUN_ALL_S = 180
VALIDATE_S = 240


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


def api(url: str, token: str, method: str = "GET", timeout: float = 5):
    request = urllib.request.Request(url, method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = response.read()
    return json.loads(body) if body else None


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

    def page_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}"


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on a scratch course, from this environment, stopped at the end whatever happens."""
    course = copy_course(tmp_path / "course")
    sample = samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON)
    notebook = course / NOTEBOOK
    notebook.parent.mkdir(parents=True)
    nbformat.write(samples.build(course, sample), notebook)

    # A scratch Jupyter: its own config, runtime, settings and workspaces, and the jax-cpu kernel
    # (the kernel nbgrader validates on, grader_config.py) installed beside this Python's kernels.
    jupyter = tmp_path / "jupyter"
    data = jupyter / "data"
    kernel_json = data / "kernels" / "jax-cpu" / "kernel.json"
    kernel_json.parent.mkdir(parents=True)
    kernel_json.write_text(json.dumps(kernels.kernelspec("jax-cpu", sys.executable), indent=2))
    write_settings(jupyter / "settings")
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ,
               PATH=os.pathsep.join([bindir, os.environ.get("PATH", "")]),
               JUPYTER_PATH=os.pathsep.join([str(data), os.environ.get("JUPYTER_PATH", "")]).rstrip(os.pathsep),
               JUPYTER_CONFIG_DIR=str(jupyter / "config"),
               JUPYTER_RUNTIME_DIR=str(jupyter / "runtime"),
               IPYTHONDIR=str(jupyter / "ipython"),
               PYTHONUNBUFFERED="1")
    env.pop("JUPYTER_TOKEN", None)

    port, token = free_port(), secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyterlab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course}",
               "--LabApp.news_url=None", "--LabApp.expose_app_in_browser=True",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               f"--LabApp.user_settings_dir={jupyter / 'settings'}",
               f"--LabApp.workspaces_dir={jupyter / 'workspaces'}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI machines often run as root
        command.append("--allow-root")
    log = tmp_path / "jupyterlab.log"
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited with {server.returncode} before answering:\n{log_tail(log)}")
            try:
                api(f"{url}/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer on {url} within {SERVER_START_S} s:\n{log_tail(log)}")
                time.sleep(0.25)
        specs = api(f"{url}/api/kernelspecs", token)["kernelspecs"]
        assert {"python3", "jax-cpu"} <= set(specs), f"kernels the server offers: {sorted(specs)}"
        yield Lab(url, token, course, log)
    finally:
        stop(server, url, token)


def stop(server: subprocess.Popen, url: str, token: str) -> None:
    """Shut the kernels down through the API, then end the server's process group."""
    if server.poll() is None:
        try:
            for kernel in api(f"{url}/api/kernels", token):
                api(f"{url}/api/kernels/{kernel['id']}", token, method="DELETE", timeout=10)
        except (urllib.error.URLError, OSError, ValueError):
            pass
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        if server.poll() is not None:
            break
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
    try:  # anything the server left in its group
        os.killpg(server.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
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


def test_solved_lesson_runs_and_validates_in_jupyterlab(browser, lab, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    console = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}") if msg.type == "error" else None)
    try:
        page.goto(lab.page_url(NOTEBOOK), wait_until="domcontentloaded", timeout=60_000)
        expected = sum(c.cell_type == "code" for c in nbformat.read(lab.course / NOTEBOOK, 4).cells)
        # The notebook is open, all its code cells are on the page, and its kernel is ready.
        wait_for_state(page, lambda s: s["kernel"] == "idle" and len(s["cells"]) == expected,
                       "the notebook open with an idle kernel", timeout_s=90)
        wait_kernel_idle(lab, timeout_s=30)
        validate = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button")
        try:
            validate.get_by_text("Validate", exact=True).wait_for(timeout=30_000)
        except Exception as exc:  # noqa: BLE001 - say what is missing, not only that a wait timed out
            raise AssertionError("no Validate button in the notebook toolbar: "
                                 "nbgrader's lab extension (@jupyter/nbgrader) did not load") from exc

        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        state = wait_for_state(page, finished, "Run All Cells finished", timeout_s=RUN_ALL_S)
        failed = [c for c in state["cells"] if c["errors"]]
        assert not failed, "cells show errors:\n" + "\n---\n".join(
            f"code cell {c['index']}: {e['ename']}: {e['evalue']}\n{e['shown']}" for c in failed for e in c["errors"])
        assert all(re.fullmatch(r"\[\d+\]:", c["prompt"]) for c in state["cells"]), state["cells"]
        wait_kernel_idle(lab, timeout_s=30)

        # Save (Ctrl+S) and wait until the page says nothing is unsaved.
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.click(position={"x": 5, "y": 5})
        page.keyboard.press("Control+s")
        wait_for_state(page, lambda s: not s["dirty"], "the notebook saved", timeout_s=30)
        saved = nbformat.read(lab.course / NOTEBOOK, 4)
        assert all(c.execution_count for c in saved.cells if c.cell_type == "code"), "saved without outputs"

        validate.get_by_text("Validate", exact=True).click()
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for(timeout=VALIDATE_S * 1000)
        text = dialog.locator(".jp-Dialog-content").inner_text()
        assert "Validation Results" in text, text
        assert SUCCESS in text, f"nbgrader's validation did not pass:\n{text}"
        assert dialog.locator(".validation-success").count() == 1
        keep_screenshot(page, tmp_path, SCREENSHOT)
        (RESULTS / FAILURE_SCREENSHOT).unlink(missing_ok=True)  # a failed run's, now out of date
        dialog.get_by_role("button", name="Ok").click()
        dialog.wait_for(state="detached")
    except BaseException:
        try:
            keep_screenshot(page, tmp_path, FAILURE_SCREENSHOT)
        except Exception:  # noqa: BLE001 - the original failure matters more
            pass
        print("\nbrowser console errors:\n" + "\n".join(console[-20:]))
        print("\nJupyterLab log:\n" + log_tail(lab.log))
        raise
    finally:
        context.close()


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
