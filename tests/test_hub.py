"""The course on JupyterHub (deploy/jupyterhub/) with nbgrader's shared exchange, in a real browser.

The test starts the course's JupyterHub the way `make hub` does (deploy/jupyterhub/trial.py's
pieces, jupyterhub_config.py unchanged) on 127.0.0.1 with free ports: its proxy
(configurable-http-proxy from `npm ci`), three local Unix users made for the test (an instructor
and two students, names prefixed `pc-` with a random suffix, homes 0700 in a scratch folder),
the instructor's course root (a copy of the course with performance-01 generated, owned by them)
and a shared exchange (1777). Every server runs as its Unix user. In Chromium, each user in a
browser context of their own, logged in through the hub's login page:

1. the instructor releases performance-01 in Formgrader (their server, on the course root);
2. the first student fetches it from the Assignments panel, solves it, runs it, validates it and
   submits it; the second submits the release untouched;
3. the instructor collects both, autogrades both (the course's grader_config.py: sandboxed
   student kernel, trusted grading kernel) and sees 11 / 11 and 0 / 11, then generates and
   releases feedback;
4. each student fetches their feedback in the Assignments panel and opens it: 11.0 / 11.0 and
   0.0 / 11.0;
5. the second student cannot read the first's work: not through the hub (their browser gets a
   refusal from the first student's server) and not on disk (as their Unix user), nor list the
   exchange's inbound; students' servers have no Formgrader; every server offers `jax-cpu`.

Screenshots of every step go to test-results/hub-*.png (hub-failure.png on a failure, with the
step, the page's text and the tail of the hub's log). Teardown stops the hub (which stops every
server and the proxy), kills whatever still runs as the test's users, removes the users and the
scratch folder, whatever happened.

Needs root (users are created and servers run as them), Node.js with the proxy installed
(`make hub-proxy`), bubblewrap, Chromium and playwright; where one is missing the test is
skipped, except under CI (CI=true), where it fails.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT
# `browser` is a fixture: importing it here is what puts it in this module's reach.
from jupyter_browser import (AUTOGRADE_S, FETCH_S, FORMGRADER_S, RELEASE_S, RESULTS, api,  # noqa: F401
                             browser, contents_url, exact, fetch, formgrader_autograde, formgrader_collect,
                             formgrader_release, formgrader_result, formgrader_row, free_port, group_alive,
                             keep_screenshot, log_tail, menu, missing, open_app, run_save_validate, solved,
                             step, submit, wait_kernel_idle, write_settings)

from perfcourse import nbgrader_bridge, samples
from perfcourse.release import released

# Nightly since 6 December, when `make test` took 9 min 52 s on 2 cores (CI's installs come on top):
# the hub test, about 90 s with its hub, proxy, three servers and a browser, is the longest test
# outside the graded class. Formgrader's path (release, collect, autograde, feedback) stays in
# `make test` through tests/test_browser.py's round trip in JupyterLab, the exchange through the
# student's walk; what only this test proves is the hub's spawner, proxy and shared exchange.
pytestmark = [pytest.mark.e2e, pytest.mark.nightly]

LESSON = "performance-01"
NOTEBOOK = f"{LESSON}/{LESSON}.ipynb"   # where Fetch puts it in a student's home
FAILURE_SCREENSHOT = "hub-failure.png"
HUB_START_S = 90       # the hub (and its proxy) answering
SPAWN_S = 180          # the three users' servers started, all at once
STOP_S = 60            # the hub stopping its servers and proxy


def load_trial():
    spec = importlib.util.spec_from_file_location("perfcourse_hub_trial", ROOT / "deploy" / "jupyterhub" / "trial.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


trial = load_trial()


@dataclass
class Hub:
    url: str
    token: str          # a service token with access to every server (the config's trial service)
    password: str
    instructor: str
    students: list[str]
    homes: dict[str, Path]
    course: Path
    course_id: str
    exchange: Path
    log: Path

    def server(self, user: str) -> str:
        return f"{self.url}/user/{user}"


def wait_answer(url: str, token: str, process: subprocess.Popen, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            pytest.fail(f"JupyterHub exited with {process.returncode} before it answered:\n{log_tail(log)}")
        try:
            api(url, token)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterHub did not answer on {url} within {timeout_s} s:\n{log_tail(log)}")
            time.sleep(0.25)


def stop_hub(process: subprocess.Popen) -> None:
    """SIGTERM: the hub stops every server it started and its proxy; then whatever is left of its group."""
    for sig, wait in ((signal.SIGTERM, STOP_S), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            process.poll()
            if not group_alive(process.pid):
                return
            time.sleep(0.2)


TEST_USER = re.compile(r"pc-(instructor|student1|student2)-[0-9a-f]{6}")


def remove_stale_users() -> None:
    """What an earlier run of this test left behind when it was killed before its teardown: its users
    (and their scratch folder) an hour or more old; no run of the test lasts that long."""
    for entry in pwd.getpwall():
        if not (TEST_USER.fullmatch(entry.pw_name) and "/perfcourse-hub-" in entry.pw_dir):
            continue
        base = Path(entry.pw_dir).parents[1]  # <scratch>/home/<user>
        try:
            stale = time.time() - base.stat().st_mtime > 3600
        except FileNotFoundError:
            stale = True
        if stale:
            trial.remove_user(entry.pw_name)
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def hub():
    if os.geteuid() != 0:
        missing("the JupyterHub test runs as root: it creates local users and the hub starts their "
                "servers as them (LocalProcessSpawner)")
    try:
        trial.require_tools()
    except trial.TrialError as exc:
        missing(f"{exc}\n(`make hub-proxy` installs the proxy)")
    remove_stale_users()
    suffix = secrets.token_hex(3)
    instructor, students = f"pc-instructor-{suffix}", [f"pc-student1-{suffix}", f"pc-student2-{suffix}"]
    # Not pytest's tmp_path: it lies in a folder only root may enter, and the users must reach
    # their homes, the exchange and the environment.
    base = Path(tempfile.mkdtemp(prefix="perfcourse-hub-"))
    os.chmod(base, 0o755)
    process = None
    started = time.monotonic()

    def done(what: str) -> None:
        print(f"\nset-up, {what}: {time.monotonic() - started:.1f} s")

    try:
        entries = {name: trial.create_user(name, base / "home" / name) for name in (instructor, *students)}
        for entry in entries.values():
            # As tests/test_browser.py has JupyterLab: no news or toasts, every cell in the page, and
            # the application reachable from the page (window.jupyterapp) for reading notebooks' state.
            write_settings(Path(entry.pw_dir) / ".jupyter" / "lab" / "user-settings")
            (Path(entry.pw_dir) / ".jupyter" / "jupyter_server_config.json").write_text(json.dumps({"LabApp": {
                "expose_app_in_browser": True, "news_url": None,
                "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}}))
            subprocess.run(["chown", "-R", f"{entry.pw_uid}:{entry.pw_gid}", f"{entry.pw_dir}/.jupyter"], check=True)
        course = Path(entries[instructor].pw_dir) / "course"
        course_id = nbgrader_bridge.coursedir(ROOT).course_id  # the copy's grader_config.py is this one
        exchange = base / "exchange"
        trial.prepare_exchange(exchange)
        state = base / "hub"
        state.mkdir(mode=0o700)
        port, token, password = free_port(), secrets.token_hex(16), secrets.token_urlsafe(12)
        log = base / "jupyterhub.log"
        url = f"http://127.0.0.1:{port}"
        # The instructor's course is generated while the environment is made, the hub starts and
        # the students' servers start; the instructor's server waits for it.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            preparing = pool.submit(trial.prepare_course, course, entries[instructor], [LESSON])
            env = trial.user_environment(base / "python", entries[students[0]])
            done("the environment the users run")
            values = trial.settings(course=course, course_id=course_id, exchange=exchange, env=env, state=state,
                                    instructors=[instructor], students=students, port=port,
                                    hub_port=free_port(), proxy_api_port=free_port(), password=password,
                                    service_token=token)
            with open(log, "wb") as out:
                process = subprocess.Popen(trial.hub_command(), cwd=state, env=trial.hub_env(values), stdout=out,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
            wait_answer(f"{url}/hub/api/users", token, process, log, HUB_START_S)
            done("the hub answering")
            # Every user's server, started through the hub's API (the browser then finds them running).
            for name in students:
                api(f"{url}/hub/api/users/{name}/server", token, method="POST", timeout=30, body={})
            assert preparing.result() == course_id
            done("the instructor's course")
        api(f"{url}/hub/api/users/{instructor}/server", token, method="POST", timeout=30, body={})
        users = [instructor, *students]
        deadline = time.monotonic() + SPAWN_S
        while not all((api(f"{url}/hub/api/users/{n}", token).get("servers", {}).get("", {}) or {}).get("ready")
                      for n in users):
            if time.monotonic() > deadline:
                pytest.fail(f"the users' servers did not start within {SPAWN_S} s:\n{log_tail(log)}")
            time.sleep(0.5)
        done("the three servers started")
        yield Hub(url, token, password, instructor, students, {n: Path(e.pw_dir) for n, e in entries.items()},
                  course, course_id, exchange, log)
    finally:
        if process is not None:
            stop_hub(process)
        for name in (instructor, *students):
            trial.remove_user(name)
        shutil.rmtree(base, ignore_errors=True)


def log_in(chromium, hub: Hub, user: str):
    """A browser context of the user's own, logged in through the hub's login page, on their JupyterLab."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{hub.url}/hub/login", wait_until="domcontentloaded")
    page.locator("#username_input").fill(user)
    page.locator("#password_input").fill(hub.password)
    page.locator("#login_submit").click()
    page.wait_for_url(f"**/user/{user}/**", timeout=60_000)
    open_app(page, f"{hub.server(user)}/lab")
    return context, page


def menu_items(page, title: str) -> list[str]:
    page.locator(".lm-MenuBar-itemLabel").filter(has_text=exact(title)).first.click()
    labels = [t.strip() for t in page.locator(".lm-Menu-itemLabel").all_inner_texts()]
    page.keyboard.press("Escape")
    return labels


def fetch_feedback(page, hub: Hub, user: str) -> Path:
    """The Assignments panel's Fetch Feedback; opens the feedback page and returns its file."""
    menu(page, "Nbgrader", "Assignment List")
    submitted = page.locator("#submitted_assignments_list .list_item").filter(has_text=LESSON).first
    button = submitted.locator("button").filter(has_text=exact("Fetch Feedback"))
    button.wait_for(timeout=FETCH_S * 1000)
    button.click()
    submitted.get_by_text("(view feedback)").first.wait_for(timeout=FETCH_S * 1000)
    found = sorted((hub.homes[user] / LESSON / "feedback").glob(f"*/{LESSON}.html"))
    assert len(found) == 1, f"feedback files in {hub.homes[user] / LESSON}: {found}"
    relative = found[0].relative_to(hub.homes[user]).as_posix()
    page.goto(f"{hub.server(user)}/files/{relative}", wait_until="domcontentloaded")
    return found[0]


def feedback_score(page) -> str:
    return page.locator("h4").filter(has_text="Score:").first.inner_text().strip()


def test_class_on_jupyterhub_through_the_shared_exchange(browser, hub, tmp_path):  # noqa: F811 (the pytest fixture)
    instructor, (first, second) = hub.instructor, hub.students
    sample = samples.parse(ROOT / "samples" / LESSON / "solution.py", LESSON)
    full = sum(sample.expected.values())
    assert full == 11, sample.expected
    inbound = hub.exchange / hub.course_id / "inbound"
    contexts, pages, console = {}, {}, []
    current = ["logging in"]
    page = None

    def shot(name: str) -> None:
        keep_screenshot(page, tmp_path, f"hub-{name}.png")

    try:
        for user in (instructor, first, second):
            with step(f"{user} logs in", page, current):
                contexts[user], pages[user] = log_in(browser, hub, user)
                pages[user].on("console", lambda msg, u=user: console.append(f"{u}: {msg.text}")
                               if msg.type == "error" else None)
        page = pages[instructor]
        for user in (instructor, first, second):  # every server offers the course's kernel
            specs = api(f"{hub.server(user)}/api/kernelspecs", hub.token)["kernelspecs"]
            assert "jax-cpu" in specs, f"{user}'s server offers the kernels {sorted(specs)}"

        with step("1. instructor: Formgrader > Release", page, current):
            formgrader_release(page, LESSON)
            outbound = hub.exchange / hub.course_id / "outbound" / LESSON / f"{LESSON}.ipynb"
            assert outbound.is_file(), f"Release put nothing at {outbound}"
            shot("1-released")

        page = pages[first]
        with step("2. first student: no Formgrader; Assignment List > Fetch", page, current):
            items = menu_items(page, "Nbgrader")
            assert "Assignment List" in items and "Formgrader" not in items, f"a student's Nbgrader menu: {items}"
            fetched_first = fetch(page, LESSON, hub.course_id)
            assert (hub.homes[first] / NOTEBOOK).is_file(), f"Fetch wrote no {NOTEBOOK} in {first}'s home"
            assert (hub.homes[first] / NOTEBOOK).stat().st_uid == pwd.getpwnam(first).pw_uid
            shot("2-fetched")

        with step("3. first student: solve, Run All, save, Validate", page, current):
            server = hub.server(first)
            fetched = nbformat.from_dict(api(contents_url(server, NOTEBOOK) + "?content=1", hub.token)["content"])
            release_nb = nbformat.read(released(hub.course, LESSON), 4)
            assert [(c.cell_type, c.source) for c in fetched.cells] == \
                [(c.cell_type, c.source) for c in release_nb.cells], "the fetched notebook is not the release"
            answer = solved(fetched, samples.build(hub.course, sample))
            api(contents_url(server, NOTEBOOK), hub.token, method="PUT", timeout=30,
                body={"type": "notebook", "format": "json", "content": answer})
            run_save_validate(page, fetched_first, LESSON, NOTEBOOK, sum(c.cell_type == "code" for c in answer.cells),
                              kernel_idle=lambda: wait_kernel_idle(server, hub.token, NOTEBOOK, timeout_s=30),
                              on_disk=hub.homes[first] / NOTEBOOK, validated=lambda: shot("3-validated"))

        with step("4. first student: Submit", page, current):
            submit(page, fetched_first, LESSON)
            shot("4-submitted")

        page = pages[second]
        with step("5. second student: Fetch, Submit the release untouched", page, current):
            fetched_second = fetch(page, LESSON, hub.course_id)
            submit(page, fetched_second, LESSON)
            shot("5-submitted-untouched")
            for user in (first, second):
                found = sorted(inbound.glob(f"{user}+{LESSON}+*"))
                assert len(found) == 1, f"{user}'s submissions in {inbound}: {found}"
            # The exchange's inbound is write-only for students: they cannot list the submissions.
            listed = trial.run_as(pwd.getpwnam(second), ["ls", str(inbound)])
            assert listed.returncode != 0 and "Permission denied" in listed.stderr, listed

        page = pages[instructor]
        with step("6. instructor: Collect, Autograde both", page, current):
            frame = formgrader_collect(page, LESSON, submissions=2)
            for user, score in ((first, full), (second, 0)):
                formgrader_autograde(frame, LESSON, user, score, full)
            shot("6-autograded")
            for user, score in ((first, full), (second, 0)):
                graded = nbgrader_bridge.notebook_score(hub.course, LESSON, user)
                assert graded is not None and (graded.score, graded.max_score) == (score, full), (user, graded)

        with step("7. instructor: generate and release feedback", page, current):
            frame.locator("a").filter(has_text="Manage Assignments").first.click()
            row = formgrader_row(frame, "name", LESSON)
            row.wait_for(timeout=FORMGRADER_S * 1000)
            row.locator("td.generate-feedback a").click()
            text = formgrader_result(frame, "Generate feedback", AUTOGRADE_S)
            assert f"Successfully generated feedback of '{LESSON}'" in text, text
            row.locator("td.release-feedback a").click()
            text = formgrader_result(frame, "Release feedback", RELEASE_S)
            assert f"Successfully released feedback of '{LESSON}'" in text, text
            shot("7-feedback-released")

        feedback = {}
        for user, score, name in ((first, full, "8-first-feedback"), (second, 0, "9-second-feedback")):
            page = pages[user]
            with step(f"{name[2:]}: Fetch Feedback, open it", page, current):
                feedback[user] = fetch_feedback(page, hub, user)
                heading = feedback_score(page)
                assert f"(Score: {float(score)} / {float(full)})" in heading, heading
                shot(name)

        page = pages[second]
        with step("10. the second student cannot read the first's work", page, current):
            relative = feedback[first].relative_to(hub.homes[first]).as_posix()
            for path in (f"api/contents/{LESSON}", f"files/{relative}"):
                response = page.request.get(f"{hub.server(first)}/{path}", fail_on_status_code=False)
                body = response.text()
                assert response.status in (403, 404) and "Score:" not in body, \
                    f"{second} asked {first}'s server for {path}: {response.status} {body[:300]}"
            page.goto(f"{hub.server(first)}/files/{relative}", wait_until="domcontentloaded")
            assert "Score:" not in page.content()
            shot("10-refused")
            # On disk, as the second student's Unix user: the first's home is closed to them.
            refused = trial.run_as(pwd.getpwnam(second), ["cat", str(feedback[first])])
            assert refused.returncode != 0 and "Permission denied" in refused.stderr, refused
            assert (hub.homes[first].stat().st_mode & 0o077) == 0, oct(hub.homes[first].stat().st_mode)
        (RESULTS / FAILURE_SCREENSHOT).unlink(missing_ok=True)  # a failed run's, now out of date
    except BaseException:
        if page is not None:
            try:
                keep_screenshot(page, tmp_path, FAILURE_SCREENSHOT)
            except Exception:  # noqa: BLE001 - the original failure matters more
                pass
        print(f"\nfailed in: {current[0]}")
        print("\nbrowser console errors:\n" + "\n".join(console[-20:]))
        print("\nJupyterHub log:\n" + log_tail(hub.log, 8000))
        raise
    finally:
        for context in contexts.values():
            context.close()
