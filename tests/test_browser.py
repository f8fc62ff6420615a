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
5. the submissions page shows the full score, 11 / 11 (the lesson's solutions earn every point),
   and the gradebook says the same, cell by cell.

Every step leaves a screenshot in test-results/ (roundtrip-1-released.png ...); a failure leaves
roundtrip-failure.png, names the step that failed and what the page showed, and prints the
browser's console errors and the tail of JupyterLab's log.

Needs Debian's Chromium, the playwright package (tests/jupyter_browser.py, whose helpers this test
shares with tests/test_hub.py) and make.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, copy_course
# `browser` is a fixture: importing it here is what puts it in this module's reach.
from jupyter_browser import (RESULTS, api, browser, contents_url, exact, fetch, finished,  # noqa: F401
                             formgrader_autograde, formgrader_collect, formgrader_release, free_port,
                             group_alive, keep_screenshot, log_tail, menu, new_page, open_app,
                             run_save_validate, solved, step, submit, wait_for_state, wait_kernel_idle,
                             write_settings)

from perfcourse import kernels, nbgrader_bridge, samples
from perfcourse.release import released

# Both walks run on the worker that grades the demo class, after it (make test's E2E: the demo's
# worker has room once the class is graded, the other worker runs the hub, the cluster and the rest;
# measured 5 December 2026 with Chromium: 374 s of end-to-end tier with them on the other worker).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("graded-demo")]

LESSON = "performance-01"
# Where nbgrader's Fetch puts the lesson: <notebook dir>/<lesson>/ (Exchange.path_includes_course = False).
NOTEBOOK = f"{LESSON}/{LESSON}.ipynb"
FAILURE_SCREENSHOT = "roundtrip-failure.png"

# Bounds on the waits of the set-up, in seconds (the page's are in jupyter_browser.py).
SETUP_S = 120          # `perfcourse release --lesson performance-01` in the scratch course
SERVER_START_S = 90    # `make lab` until the server answers


class Lab:
    def __init__(self, url: str, token: str, course: Path, log: Path, served: Path):
        # served: the folder JupyterLab serves (the course for `make lab`, the student
        # publication for `make student-lab`)
        self.url, self.token, self.course, self.log, self.served = url, token, course, log, served

    def page_url(self, path: str = "") -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}" if path else f"{self.url}/lab?token={self.token}"

    def contents(self, path: str) -> str:
        return contents_url(self.url, path)


def scratch_course(tmp_path: Path) -> Path:
    """A scratch course where performance-01 is generated and the exchange exists."""
    if shutil.which("make") is None:
        pytest.fail("make is not installed: the test starts JupyterLab with make")
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
    return course


@contextlib.contextmanager
def make_lab(target: str, course: Path, tmp_path: Path, served: Path, make_vars: tuple[str, ...] = ()):
    """`make TARGET` (the Makefile's own recipe) run in `course`, serving `served`; stopped at the
    end whatever happens."""
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
    # tools, run in the course: it serves its folder (--notebook-dir=., which JupyterLab refuses to
    # have twice, so no root_dir here) and adds --allow-root by itself when run as root.
    command = ["make", "--no-print-directory", "-f", str(ROOT / "Makefile"), target,
               "STAMP=", f"BIN={bindir}", f"LAB_ARGS={shlex.join(lab_args)}", *make_vars]
    log = tmp_path / f"{target}.log"
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"`make {target}` exited with {server.returncode} before JupyterLab answered:\n"
                            f"{log_tail(log)}")
            try:
                api(f"{url}/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer on {url} within {SERVER_START_S} s:\n{log_tail(log)}")
                time.sleep(0.25)
        specs = api(f"{url}/api/kernelspecs", token)["kernelspecs"]
        assert {"python3", "jax-cpu"} <= set(specs), f"kernels the server offers: {sorted(specs)}"
        yield Lab(url, token, course, log, served)
    finally:
        stop(server, url, token)


@pytest.fixture
def lab(tmp_path):
    """`make lab` on a scratch course where performance-01 is generated."""
    course = scratch_course(tmp_path)
    with make_lab("lab", course, tmp_path, course) as running:
        top = {item["name"] for item in api(f"{running.url}/api/contents/", running.token)["content"]}
        assert {"grader_config.py", "release", "exchange"} <= top, \
            f"`make lab` does not serve the course: {sorted(top)}"
        yield running


@pytest.fixture
def student_lab(tmp_path):
    """`make student-lab` on a scratch course whose instructor released performance-01 to the
    exchange (plain nbgrader, as Formgrader's Release does it): the server serves the student
    publication, _student/, with a student's nbgrader settings."""
    course = scratch_course(tmp_path)
    released_now = subprocess.run([sys.executable, "-m", "nbgrader", "release_assignment", LESSON],
                                  cwd=course, env=nbgrader_bridge.nbgrader_env(), text=True,
                                  capture_output=True, timeout=SETUP_S)
    assert released_now.returncode == 0, released_now.stdout + released_now.stderr
    # The student's server runs sandboxed (as nobody, when the test runs as root), with only the
    # publication, the exchange and this scratch Jupyter's settings mounted.
    jupyter = tmp_path / "jupyter"
    for folder in (jupyter, jupyter / "settings", jupyter / "workspaces"):
        folder.mkdir()
        folder.chmod(0o777)  # JupyterLab, as nobody, saves its workspace and settings there
    with make_lab("student-lab", course, tmp_path, course / "_student",
                  make_vars=(f"STUDENT_LAB_SHARE={jupyter}",)) as running:
        yield running


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



def student_id() -> str:
    """The student id nbgrader's exchange gives this user (the Unix user name)."""
    from nbgrader.utils import get_username

    return get_username()


def test_lesson_round_trip_through_the_exchange(browser, lab, tmp_path):  # noqa: F811 (the pytest fixture)
    course = lab.course
    student = student_id()
    course_id = nbgrader_bridge.coursedir(course).course_id
    sample = samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON)
    full_marks = sum(sample.expected.values())
    inbound = course / "exchange" / course_id / "inbound"

    context, page = new_page(browser)
    console = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}") if msg.type == "error" else None)
    current = ["opening JupyterLab"]

    try:
        with step("open JupyterLab", page, current):
            open_app(page, lab.page_url())

        with step("1. instructor: Formgrader > Release", page, current):
            formgrader_release(page, LESSON)
            outbound = course / "exchange" / course_id / "outbound" / LESSON / f"{LESSON}.ipynb"
            assert outbound.is_file(), f"Release put nothing at {outbound}"
            keep_screenshot(page, tmp_path, "roundtrip-1-released.png")

        with step("2. student: Assignment List > Fetch", page, current):
            fetched_item = fetch(page, LESSON, course_id)
            assert (course / NOTEBOOK).is_file(), f"Fetch wrote no {NOTEBOOK} in the notebook directory"
            keep_screenshot(page, tmp_path, "roundtrip-2-fetched.png")

        with step("3. student: solve, Run All, save, Validate", page, current):
            # What the student fetched is what the instructor released.
            fetched = nbformat.from_dict(api(lab.contents(NOTEBOOK) + "?content=1", lab.token)["content"])
            release_nb = nbformat.read(released(course, LESSON), 4)
            assert [(c.cell_type, c.source) for c in fetched.cells] == \
                [(c.cell_type, c.source) for c in release_nb.cells], "the fetched notebook is not the release"
            answer = solved(fetched, samples.build(course, sample))
            api(lab.contents(NOTEBOOK), lab.token, method="PUT", timeout=30,
                body={"type": "notebook", "format": "json", "content": answer})

            # Open it from the Assignments panel: the fetched lesson's notebook list, then the notebook.
            expected = sum(c.cell_type == "code" for c in answer.cells)
            saved = run_save_validate(
                page, fetched_item, LESSON, NOTEBOOK, expected,
                kernel_idle=lambda: wait_kernel_idle(lab.url, lab.token, NOTEBOOK, timeout_s=30),
                on_disk=course / NOTEBOOK,
                validated=lambda: keep_screenshot(page, tmp_path, "roundtrip-3-validated.png"))

        with step("4. student: Assignment List > Submit", page, current):
            submit(page, fetched_item, LESSON)
            submissions = sorted(inbound.glob(f"{student}+{LESSON}+*"))
            assert len(submissions) == 1, f"in {inbound}: {sorted(p.name for p in inbound.iterdir())}"
            assert (submissions[0] / f"{LESSON}.ipynb").is_file(), sorted(submissions[0].iterdir())
            keep_screenshot(page, tmp_path, "roundtrip-4-submitted.png")

        with step("5. instructor: Formgrader > Collect", page, current):
            frame = formgrader_collect(page, LESSON, submissions=1)
            collected = nbgrader_bridge.folder(course, "submitted", student, LESSON) / f"{LESSON}.ipynb"
            assert collected.is_file(), f"Collect put nothing at {collected}"
            assert [c.source for c in nbformat.read(collected, 4).cells] == [c.source for c in saved.cells], \
                "the collected notebook is not the one the student saved"
            keep_screenshot(page, tmp_path, "roundtrip-5-collected.png")

        with step("6. instructor: Formgrader > Autograde", page, current):
            formgrader_autograde(frame, LESSON, student, full_marks, full_marks)
            keep_screenshot(page, tmp_path, "roundtrip-6-autograded.png")

        with step("7. the gradebook's score", page, current):
            score = nbgrader_bridge.notebook_score(course, LESSON, student)
            assert score is not None, f"the gradebook has no {LESSON} notebook for {student}"
            assert (score.score, score.max_score) == (full_marks, full_marks) == (11.0, 11.0), score
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


def test_a_student_fetches_solves_and_validates_without_seeing_the_course(browser, student_lab, tmp_path):  # noqa: F811 (the pytest fixture)
    """A student's path, as `make student-lab` gives it (docs/students/start.md, "JupyterLab with
    the course's exchange"): JupyterLab shows the publication only (README.md, GUIDE.md, release/,
    requirements.txt; never source/, samples/ or the checks), the Assignments panel lists the
    released lesson, Fetch writes it into the student's folder, Run All and Validate pass, and the
    course's tracked release notebook is untouched."""
    lab = student_lab
    course_id = nbgrader_bridge.coursedir(lab.course).course_id
    tracked = released(lab.course, LESSON).read_bytes()
    top = {item["name"] for item in api(lab.contents(""), lab.token)["content"]}
    assert top == {"README.md", "GUIDE.md", "release", "requirements.txt"}, sorted(top)
    for outside in ("source", "samples", "../source", "../grader_config.py"):
        with pytest.raises(urllib.error.HTTPError):  # 404: nothing of the course is in the server's reach
            api(lab.contents(outside), lab.token)
    sample = samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON)

    context, page = new_page(browser)
    current = ["opening JupyterLab"]
    try:
        with step("open the student's JupyterLab", page, current):
            open_app(page, lab.page_url())
            keep_screenshot(page, tmp_path, "student-1-opened.png")

        with step("Assignment List > Fetch", page, current):
            fetched_item = fetch(page, LESSON, course_id)
            assert (lab.served / NOTEBOOK).is_file(), f"Fetch wrote no {NOTEBOOK} in the student's folder"

        with step("solve, Run All, save, Validate", page, current):
            fetched = nbformat.from_dict(api(lab.contents(NOTEBOOK) + "?content=1", lab.token)["content"])
            answer = solved(fetched, samples.build(lab.course, sample))
            api(lab.contents(NOTEBOOK), lab.token, method="PUT", timeout=30,
                body={"type": "notebook", "format": "json", "content": answer})
            run_save_validate(
                page, fetched_item, LESSON, NOTEBOOK, sum(c.cell_type == "code" for c in answer.cells),
                kernel_idle=lambda: wait_kernel_idle(lab.url, lab.token, NOTEBOOK, timeout_s=30),
                on_disk=lab.served / NOTEBOOK,
                validated=lambda: keep_screenshot(page, tmp_path, "student-2-validated.png"))
        assert released(lab.course, LESSON).read_bytes() == tracked, "the tracked release notebook changed"
    except BaseException:
        print(f"\nfailed in: {current[0]}\n\nJupyterLab log:\n" + log_tail(lab.log))
        raise
    finally:
        context.close()


PROBE_NOTEBOOK = "probe.ipynb"


def test_a_students_terminal_and_notebook_reach_nothing_of_the_course(browser, student_lab, tmp_path):  # noqa: F811 (the pytest fixture)
    """`make student-lab` as a curious student uses it: a terminal opened in the page and a notebook
    run in the page each try to read the course around the publication (a solution and hidden
    tests in source/, the gradebook, grader_config.py) and to list it; the sandbox must leave every
    one of them out of reach, and, when the server was started as root, both run as nobody."""
    lab = student_lab
    course = lab.course
    targets = [course / "source" / LESSON / f"{LESSON}.ipynb", course / "gradebook.db", course / "grader_config.py"]
    assert all(t.is_file() for t in targets), "the scratch course lacks what the probes try to read"
    secret = "### BEGIN SOLUTION"
    assert secret in targets[0].read_text()

    probe = nbformat.v4.new_notebook()
    probe.cells = [nbformat.v4.new_code_cell(
        "import json, os\n"
        f"targets = {[str(t) for t in targets]!r}\n"
        "seen = {'uid': os.getuid()}\n"
        "for t in targets + [" + repr(str(course)) + "]:\n"
        "    try:\n"
        "        seen[t] = sorted(os.listdir(t)) if os.path.isdir(t) else open(t, 'rb').read(4096).decode('latin-1')\n"
        "    except OSError as exc:\n"
        "        seen[t] = f'refused: {exc.strerror}'\n"
        "json.dump(seen, open('probe-notebook.json', 'w'))\n")]
    probe.metadata["kernelspec"] = {"name": "jax-cpu", "display_name": "Python (JAX, CPU)", "language": "python"}
    api(lab.contents(PROBE_NOTEBOOK), lab.token, method="PUT", timeout=30,
        body={"type": "notebook", "format": "json", "content": probe})
    terminal_command = (f"(id -u; ls -a {course}; cat {' '.join(map(str, targets))}; echo end) "
                        "> probe-terminal.txt 2>&1")

    context, page = new_page(browser)
    current = ["opening JupyterLab"]
    try:
        with step("a notebook tries to read the course", page, current):
            open_app(page, lab.page_url(PROBE_NOTEBOOK))
            wait_for_state(page, PROBE_NOTEBOOK, lambda s: s["kernel"] == "idle" and len(s["cells"]) == 1,
                           "the probe notebook open with an idle kernel", timeout_s=90)
            menu(page, "Run", "Run All Cells")
            wait_for_state(page, PROBE_NOTEBOOK, finished, "the probe cell ran", timeout_s=60)
            seen = json.loads((lab.served / "probe-notebook.json").read_text())
        with step("a terminal tries to read the course", page, current):
            page.locator(".lm-MenuBar-itemLabel").filter(has_text=exact("File")).first.click()
            page.locator(".lm-Menu-itemLabel").filter(has_text=exact("New")).first.click()
            page.locator(".lm-Menu-itemLabel").filter(has_text=exact("Terminal")).first.click()
            page.locator(".jp-Terminal .xterm").first.click()
            page.keyboard.type(terminal_command + "\n")
            written = lab.served / "probe-terminal.txt"
            deadline = time.monotonic() + 30
            while not (written.is_file() and written.read_text(errors="replace").rstrip().endswith("end")):
                assert time.monotonic() < deadline, "the terminal wrote no probe-terminal.txt in 30 s"
                time.sleep(0.25)
            said = written.read_text(errors="replace")
            keep_screenshot(page, tmp_path, "student-terminal.png")
    except BaseException:
        print(f"\nfailed in: {current[0]}\n\nJupyterLab log:\n" + log_tail(lab.log))
        raise
    finally:
        context.close()
    for target in map(str, targets):
        assert str(seen[target]).startswith("refused"), \
            f"a notebook in the student's server read {target}: {seen[target]!r:.200}"
    # Of the course's own folder only the exchange is mounted (Fetch and Submit go through it).
    assert seen[str(course)] == ["exchange"], f"the course's folder, seen from a notebook: {seen[str(course)]}"
    assert secret not in said and said.count("No such file or directory") == len(targets), \
        f"the terminal read the course:\n{said}"
    if os.geteuid() == 0:
        assert seen["uid"] == 65534 and said.split()[0] == "65534", (seen["uid"], said.split()[:1])


def test_a_students_script_runs_in_no_page_an_instructor_opens(browser, tmp_path):  # noqa: F811 (the pytest fixture)
    """A graded notebook's feedback page, rendered as nbgrader renders it (nbconvert's HTML), in
    headless Chromium: unsanitized, the student's script, handlers and JavaScript output run (the
    test can tell); sanitized as grading and feedback leave it, none does."""
    from test_feedback import hostile_markup, rendered

    page = browser.new_page()
    try:
        counts = {}
        for sanitized in (False, True):
            path = tmp_path / f"feedback-{sanitized}.html"
            path.write_text(rendered(hostile_markup(sanitized)))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            page.wait_for_timeout(500)  # an image's onerror fires after it failed to load
            counts[sanitized] = page.evaluate("window.perfcourseRan || 0")
        assert counts[False] >= 2, counts  # the control: such markup does run in this browser
        assert counts[True] == 0, counts
    finally:
        page.close()
