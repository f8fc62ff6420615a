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

A second walk is a student's (issue 52): on a course whose schedule has released performance-01
alone, from the students' site (`perfcourse site --students`) to the guide's route into `make
student-lab`, Fetch, Run All and Validate there, then a terminal and a kernel of that server looking
everywhere they can for any solution or hidden-test line and the gradebook (tests/reach_probe.py).
Its screenshots are walk-1-site.png ... walk-5-terminal.png.

Needs Debian's Chromium, the playwright package (tests/jupyter_browser.py, whose helpers this test
shares with tests/test_hub.py) and make; the student's walk starts on the site where Node.js and
Jupyter Book are installed (as `make test` installs them), else in JupyterLab, with a warning.
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
import warnings
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
import reach_probe

from perfcourse import kernels, launch, nbgrader_bridge, samples
from perfcourse.course import lessons, read_notebook, source_notebook
from perfcourse.grading import sandbox
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
SITE_S = 180           # `perfcourse site --students` (about 20 s on a loaded 2-core machine)
PROBE_S = 180          # a probe's walk of everything the student's server sees

# The walk's course: course.toml's [schedule] releases performance-01 on this day and lists no
# other lesson, so every other one waits.
RELEASED_ON = "2025-09-01"
PROBE_NOTEBOOK = "probe.ipynb"
# The regions of a source notebook students never get (nbgrader's markers, as the lessons write them).
REGIONS = {"### BEGIN SOLUTION": "### END SOLUTION", "### BEGIN HIDDEN TESTS": "### END HIDDEN TESTS"}
SHORTEST_LINE = 12  # characters: a shorter line (`return y`) tells no solution and matches by chance


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
    """`make student-lab` on a scratch course whose course.toml releases performance-01 only (every
    other lesson waits) and whose instructor released that lesson to the exchange (plain nbgrader,
    as Formgrader's Release does it): the server serves the student publication, _student/, with a
    student's nbgrader settings."""
    course = scratch_course(tmp_path)
    with open(course / "course.toml", "a", encoding="utf-8") as toml:  # [schedule] is its last table
        toml.write(f"{LESSON} = {RELEASED_ON}\n")
    shutil.copy2(ROOT / "README.md", course / "README.md")  # the site's home page
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


def students_site(course: Path, output: Path) -> Path:
    """`perfcourse site --students`, built offline in `course` into `output`; its html/ folder."""
    done = subprocess.run([sys.executable, "-m", "perfcourse.cli", "site", "--students", "--output", str(output)],
                          cwd=course, text=True, capture_output=True, timeout=SITE_S)
    assert done.returncode == 0, f"`perfcourse site --students` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return output / "html"


def unpublished_lines(course: Path, published: list[bytes]) -> dict[str, list[str]]:
    """Each lesson's lines a student never gets: those of its solution and hidden-test regions in
    source/ (a solution cell without markers: all of it), the markers included, stripped; less
    the short ones and any that `published` (what students do get, and the student's own answer)
    holds as it is or as a notebook's JSON writes it."""
    def given(line: str) -> bool:
        forms = (line.encode(), json.dumps(line)[1:-1].encode())
        return any(form in text for form in forms for text in published)

    found = {}
    for lesson in lessons(course):
        lines = []
        for cell in read_notebook(source_notebook(course, lesson)).cells:
            if cell.metadata.get("nbgrader", {}).get("solution") and not any(m in cell.source for m in REGIONS):
                lines += cell.source.splitlines()
                continue
            end = None
            for line in cell.source.splitlines():
                if end is None and line.strip() in REGIONS:
                    end = REGIONS[line.strip()]
                    lines.append(line)
                elif end is not None and line.strip() == end:
                    end = None
                elif end is not None:
                    lines.append(line)
        kept = dict.fromkeys(s for s in (line.strip() for line in lines) if len(s) >= SHORTEST_LINE and not given(s))
        found[lesson] = list(kept)
    return found


def site_tools() -> bool:
    """Whether `perfcourse site` can build here: Node.js and Jupyter Book (requirements-site.txt)."""
    return shutil.which("node") is not None and Path(sys.executable).with_name("jupyter-book").is_file()


def walk_the_students_site(page, current: list[str], course: Path, tmp_path: Path, lines: list[str],
                           waiting: list[str]) -> None:
    """The students' site of `course`, built offline: it lists performance-01 alone (the waiting
    lessons named, never linked) and holds none of `lines`; from its home page the student opens
    the lesson's page, then the guide, whose route into JupyterLab the walk goes on with."""
    with step("the students' site lists performance-01 alone", page, current):
        html = students_site(course, tmp_path / "site")
        pages = {p["source"]: p for p in json.loads((html / "pages.json").read_text())["pages"]}
        lesson_page, guide_page = pages[launch.notebook_path(LESSON)], pages["docs/students/start.md"]
        assert [s for s in pages if s.startswith("release/")] == [launch.notebook_path(LESSON)], sorted(pages)
        on_site = reach_probe.scan([str(html)], lines)
        assert not on_site["lines"] and not on_site["gradebooks"], on_site
        page.goto((html / "index.html").as_uri())
        links = page.eval_on_selector_all("a", "as => as.map(a => a.getAttribute('href'))")
        assert lesson_page["file"] in links, links
        assert not [link for link in links if any(lesson in (link or "") for lesson in waiting)], links
        assert all(lesson in page.locator("body").inner_text() for lesson in waiting), "a waiting lesson unnamed"
        keep_screenshot(page, tmp_path, "walk-1-site.png")

    with step("the lesson's page, then the guide's route to JupyterLab", page, current):
        page.locator(f"a[href='{lesson_page['file']}']").first.click()
        page.wait_for_url(f"**/{lesson_page['file']}")
        assert page.locator("h1").first.inner_text().strip() == lesson_page["title"]
        page.locator(f"a[href='{guide_page['file']}']").first.click()
        page.wait_for_url(f"**/{guide_page['file']}")
        assert page.locator("h1").first.inner_text().strip() == guide_page["title"]
        guide = page.locator("body").inner_text().replace("\u2019", "'")  # the theme's typographic quotes
        assert "In JupyterLab, with the course's exchange" in guide and "make student-lab" in guide, guide[:2000]
        keep_screenshot(page, tmp_path, "walk-2-guide.png")


def probe_notebook(probe: Path, orders: Path, result: Path) -> nbformat.NotebookNode:
    """A notebook whose one cell runs tests/reach_probe.py in its kernel."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import runpy\n"
        f"runpy.run_path({str(probe)!r})['main']({str(orders)!r}, {str(result)!r})\n")]
    nb.metadata["kernelspec"] = {"name": "jax-cpu", "display_name": "Python (JAX, CPU)", "language": "python"}
    return nb


def test_a_student_walks_from_the_published_site_to_a_validated_notebook_reaching_nothing_else(
        browser, student_lab, tmp_path):  # noqa: F811 (the pytest fixture)
    """Issue 52's walk, on a course whose schedule has released performance-01 only: the students'
    site (`perfcourse site --students`) lists that lesson alone; the student opens its page, then
    the guide's route into the course's JupyterLab ("In JupyterLab, with the course's exchange":
    the server `make student-lab` starts on `perfcourse publish`'s folder), which shows the
    publication only (README.md, GUIDE.md, release/performance-01, requirements.txt). There the
    Assignments panel's Fetch, Run All and the toolbar's Validate pass, and the course's tracked
    release notebook is untouched. Then a terminal and a notebook's kernel each walk everything they
    see (/, .., $HOME, /work, the course's and the checkout's paths), reading every file but the
    host's system and Python environment, for any solution or hidden-test line of any lesson's
    source/ notebook and for a gradebook, and try the course's files by name: nothing may be
    found, and, when the server was started as root, both run as nobody. The probe is proven on
    the scratch course itself first: it finds every lesson's source notebook and the gradebook."""
    lab = student_lab
    course = lab.course
    publication = lab.served
    course_id = nbgrader_bridge.coursedir(course).course_id
    tracked = released(course, LESSON).read_bytes()
    sample = samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON)
    solution = samples.build(course, sample)
    shared = tmp_path / "jupyter" / "probe"  # mounted in the sandbox at the same path (STUDENT_LAB_SHARE)
    shared.mkdir()
    shared.chmod(0o777)
    probe = Path(shutil.copy2(Path(reach_probe.__file__), shared / "reach_probe.py"))
    orders = shared / "orders.json"
    results = {"terminal": shared / "terminal.json", "notebook": shared / "notebook.json"}
    probe_nb = probe_notebook(probe, orders, results["notebook"])

    # What the probes look for, and the proof that they find it where it is.
    given = [path.read_bytes() for folder in (course / "release", publication) for path in folder.rglob("*")
             if path.is_file()]
    given += [nbformat.writes(solution).encode(), nbformat.writes(probe_nb).encode(), probe.read_bytes()]
    hidden = unpublished_lines(course, given)
    lines = [line for lesson_lines in hidden.values() for line in lesson_lines]
    control = reach_probe.scan([str(course)], lines)
    unfound = [lesson for lesson in hidden if str(source_notebook(course, lesson)) not in control["lines"]]
    assert not unfound, f"the probe finds no line of these lessons in their source notebooks: {unfound}"
    assert control["gradebooks"] == [str(course / "gradebook.db")], control["gradebooks"]
    names = [f"source/{lesson}/{lesson}.ipynb" for lesson in hidden] + ["gradebook.db"]
    as_software = reach_probe.scan([str(course)], lines, software=[str(course)], names=names, marks=list(hidden))
    course_files = [source_notebook(course, lesson) for lesson in hidden] + [course / "gradebook.db"]
    assert sorted(as_software["named"]) == sorted(map(str, course_files)), as_software["named"]
    # The course's files by name: the terminal's shell reads a few itself, the probes try them all.
    by_name = [course / "gradebook.db", course / "grader_config.py", ROOT / "source" / LESSON / f"{LESSON}.ipynb"]
    targets = [source_notebook(course, lesson) for lesson in hidden] + by_name
    orders.write_text(json.dumps({
        "roots": ["/", "..", "~", "/work", str(course), str(ROOT)],
        "lines": reach_probe.encode(lines),
        "software": [*sandbox.SYSTEM_DIRECTORIES, *sandbox.python_directories(with_package=False)],
        "names": names,
        "marks": list(hidden),
        "paths": [str(t) for t in targets] + ["../gradebook.db", f"../source/{LESSON}/{LESSON}.ipynb"],
        "listed": [str(course)]}))

    waiting = [lesson for lesson in hidden if lesson != LESSON]
    context, page = new_page(browser)
    current = ["opening the students' site"]
    try:
        if site_tools():
            walk_the_students_site(page, current, course, tmp_path, lines, waiting)
        else:  # the rest of the walk still runs: the student's server is what must keep the course out of reach
            warnings.warn("the student's walk starts in JupyterLab: the students' site needs Node.js and Jupyter "
                          "Book (make .venv/.site-installed)", stacklevel=1)

        with step("the student's JupyterLab holds the publication of performance-01 only", page, current):
            open_app(page, lab.page_url())
            top = {item["name"] for item in api(lab.contents(""), lab.token)["content"]}
            assert top == {"README.md", "GUIDE.md", "release", "requirements.txt"}, sorted(top)
            lessons_there = {item["name"] for item in api(lab.contents("release"), lab.token)["content"]}
            assert lessons_there == {LESSON}, sorted(lessons_there)
            readme = api(lab.contents("README.md") + "?content=1", lab.token)["content"]
            assert launch.notebook_path(LESSON) in readme and not [w for w in waiting if w in readme], readme
            for outside in ("source", "samples", "../source", "../grader_config.py"):
                with pytest.raises(urllib.error.HTTPError):  # 404: nothing of the course is served
                    api(lab.contents(outside), lab.token)
            keep_screenshot(page, tmp_path, "walk-3-lab.png")

        with step("Assignment List > Fetch", page, current):
            fetched_item = fetch(page, LESSON, course_id)
            assert (publication / NOTEBOOK).is_file(), f"Fetch wrote no {NOTEBOOK} in the student's folder"

        with step("solve, Run All, save, Validate", page, current):
            fetched = nbformat.from_dict(api(lab.contents(NOTEBOOK) + "?content=1", lab.token)["content"])
            answer = solved(fetched, solution)
            api(lab.contents(NOTEBOOK), lab.token, method="PUT", timeout=30,
                body={"type": "notebook", "format": "json", "content": answer})
            run_save_validate(
                page, fetched_item, LESSON, NOTEBOOK, sum(c.cell_type == "code" for c in answer.cells),
                kernel_idle=lambda: wait_kernel_idle(lab.url, lab.token, NOTEBOOK, timeout_s=30),
                on_disk=publication / NOTEBOOK,
                validated=lambda: keep_screenshot(page, tmp_path, "walk-4-validated.png"))
        assert released(course, LESSON).read_bytes() == tracked, "the tracked release notebook changed"

        with step("a notebook's kernel looks for the course", page, current):
            api(lab.contents(PROBE_NOTEBOOK), lab.token, method="PUT", timeout=30,
                body={"type": "notebook", "format": "json", "content": probe_nb})
            open_app(page, lab.page_url(PROBE_NOTEBOOK))
            wait_for_state(page, PROBE_NOTEBOOK, lambda s: s["kernel"] == "idle" and len(s["cells"]) == 1,
                           "the probe notebook open with an idle kernel", timeout_s=90)
            menu(page, "Run", "Run All Cells")
            state = wait_for_state(page, PROBE_NOTEBOOK, finished, "the probe cell ran", timeout_s=PROBE_S)
            assert not state["cells"][0]["errors"], state["cells"][0]["errors"]

        with step("a terminal looks for the course", page, current):
            said_file = shared / "terminal.txt"
            command = (f"(id -u; cat {' '.join(map(str, by_name))}; "
                       f"python3 {probe} {orders} {results['terminal']}; echo end) > {said_file} 2>&1")
            menu(page, "File", "New")  # opens the submenu
            page.locator(".lm-Menu-itemLabel").filter(has_text=exact("Terminal")).first.click()
            page.locator(".jp-Terminal .xterm").first.click()
            page.keyboard.type(command + "\n")
            deadline = time.monotonic() + PROBE_S
            while not (said_file.is_file() and said_file.read_text(errors="replace").rstrip().endswith("end")):
                assert time.monotonic() < deadline, f"the terminal wrote no {said_file.name} in {PROBE_S} s"
                time.sleep(0.25)
            said = said_file.read_text(errors="replace")
            keep_screenshot(page, tmp_path, "walk-5-terminal.png")
    except BaseException:
        print(f"\nfailed in: {current[0]}\n\nJupyterLab log:\n" + log_tail(lab.log))
        raise
    finally:
        context.close()

    published_files = sum(path.is_file() for path in publication.rglob("*"))
    assert said.count("No such file or directory") == len(by_name) and said.rstrip().endswith("end"), \
        f"the terminal read the course:\n{said}"
    for who, path in results.items():
        seen = json.loads(path.read_text())
        assert seen["read"] >= published_files, f"the {who}'s probe read only {seen['read']} files"  # it looked
        assert not seen["lines"], f"the {who} read solution or hidden-test lines, in: {seen['lines']}"
        assert not seen["gradebooks"] and not seen["named"], f"the {who} reached {seen['gradebooks'] + seen['named']}"
        opened = {path: how for path, how in seen["tried"].items() if not how.startswith("refused")}
        assert not opened, f"the {who} opened the course's files: {opened}"
        # Of the course's own folder only the exchange is mounted (Fetch and Submit go through it).
        assert seen["listed"] == {str(course): ["exchange"]}, f"the course's folder, from the {who}: {seen['listed']}"
        if os.geteuid() == 0:
            assert seen["uid"] == 65534, f"the {who} runs as uid {seen['uid']}, not nobody"
    if os.geteuid() == 0:
        assert said.split()[0] == "65534", said.split()[:1]


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
