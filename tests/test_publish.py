"""`perfcourse publish`: what students get holds the lessons and their guide, and no solution,
hidden test or course code (fast tier: files and git only, no kernel)."""
from __future__ import annotations

import re
import subprocess

import nbformat
import pytest

from conftest import ROOT, perfcourse

from perfcourse import launch, publish
from perfcourse.course import CONFIG_FILES, CourseError, copy_course, lessons
from perfcourse.course import settings as course_settings

LESSONS = lessons(ROOT)
BLOCKS = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)


def withheld() -> list[str]:
    """Every solution and hidden-test body of source/, as the lines between its delimiters."""
    bodies = []
    for lesson in LESSONS:
        nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", 4)
        for cell in nb.cells:
            bodies += [body.strip("\n") for _, body in BLOCKS.findall(cell.source + "\n") if body.strip()]
    return bodies


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    target = tmp_path_factory.mktemp("publication") / "course"
    written = publish.publish(ROOT, target, check=False)  # release/'s currency: its own tests below
    return target, written


def test_the_publication_holds_the_lessons_the_guide_and_the_requirements(published):
    target, written = published
    assert {p for p in written if not p.startswith("release/")} == {
        "README.md", publish.GUIDE, "requirements.txt", ".gitignore"}
    assert {f"release/{lesson}/{lesson}.ipynb" for lesson in LESSONS} <= set(written)
    on_disk = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert on_disk == sorted(written + [publish.MANIFEST])
    assert sorted(p.name for p in target.iterdir()) == sorted(
        [".gitignore", publish.MANIFEST, publish.GUIDE, "README.md", "release", "requirements.txt"])
    for lesson in LESSONS:  # the release notebook as committed, byte for byte
        path = f"release/{lesson}/{lesson}.ipynb"
        assert (target / path).read_bytes() == (ROOT / path).read_bytes()
    requirements = (target / "requirements.txt").read_text()
    assert all(re.search(rf"^{name}==\S+$", requirements, re.M) for name in publish.STUDENT_PACKAGES)
    readme = (target / "README.md").read_text()
    assert all(f"(release/{lesson}/{lesson}.ipynb)" in readme for lesson in LESSONS) and "(GUIDE.md)" in readme


def test_no_solution_hidden_test_or_course_code_is_published(published):
    target, _ = published
    bodies = withheld()
    assert len(bodies) > 3 * len(LESSONS)  # the solutions and hidden tests of every lesson
    text = "\n".join(p.read_text(encoding="utf-8") for p in target.rglob("*") if p.is_file())
    # Notebooks hold their sources as JSON strings: read them as the cells' text too.
    text += "\n".join(cell.source for p in target.rglob("*.ipynb") for cell in nbformat.read(p, 4).cells)
    leaked = [body for body in bodies if body in text]
    assert leaked == []
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "perfcourse.checks", "from perfcourse", "samples/",
                   "adversarial/", "grader_config"):
        assert marker not in text, marker


def test_the_guides_links_hold_in_the_publication(published):
    target, _ = published
    guide = (target / publish.GUIDE).read_text()
    for link in re.findall(r"\]\(([^)\s]+)\)", guide):
        if not re.match(r"^(https?:|mailto:|#)", link):
            assert (target / link.partition("#")[0]).is_file(), link


def test_launch_links_point_into_the_publication(tmp_path):
    root = copy_course(ROOT, tmp_path / "course", CONFIG_FILES + ("release", "source", "docs", "requirements-cpu.txt"))
    (root / "course.toml").write_text('[publication]\nrepository = "org/jax-course-students"\nbranch = "fall"\n'
                                      '[hub]\nurl = "https://hub.example.edu"\n')
    publish.publish(root, tmp_path / "out", check=False)  # the release's badges are the committed ones
    readme = (tmp_path / "out" / "README.md").read_text()
    settings = course_settings(root)
    for lesson in LESSONS:
        assert launch.colab_link(settings, lesson) in readme and launch.hub_link(settings, lesson) in readme
    assert ("https://colab.research.google.com/github/org/jax-course-students/blob/fall/"
            "release/performance-01/performance-01.ipynb") == launch.colab_link(settings, "performance-01")
    assert "repo=https%3A%2F%2Fgithub.com%2Forg%2Fjax-course-students" in launch.hub_link(settings, "performance-01")


@pytest.mark.slow
def test_publishing_again_replaces_only_its_own_files_and_commits_with_git(tmp_path):
    import shutil

    # Two lessons: publish regenerates each in a scratch course to check release/ is current.
    course = copy_course(ROOT, tmp_path / "course",
                         CONFIG_FILES + ("release", "source", "docs", "requirements-cpu.txt"))
    for folder in ("source", "release"):
        for path in (course / folder).iterdir():
            if path.name not in LESSONS[:2]:
                shutil.rmtree(path)
    target = tmp_path / "students"
    proc = perfcourse("publish", str(target), "--git", cwd=course)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = subprocess.run(["git", "-C", str(target), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.splitlines() == ["The course's student publication (perfcourse publish)"]
    tracked = subprocess.run(["git", "-C", str(target), "ls-files"], capture_output=True, text=True).stdout.split()
    assert "README.md" in tracked and f"release/{LESSONS[0]}/{LESSONS[0]}.ipynb" in tracked
    (target / "performance-01").mkdir()  # a student's fetched lesson and a file of theirs stay
    (target / "performance-01" / "mine.ipynb").write_text("{}")
    (target / "release" / "stale.txt").write_text("x")
    with open(target / publish.MANIFEST, "a") as manifest:
        manifest.write("release/stale.txt\n")  # as if the last publication had written it
    assert perfcourse("publish", str(target), "--git", cwd=course).returncode == 0
    assert (target / "performance-01" / "mine.ipynb").is_file() and not (target / "release" / "stale.txt").exists()
    log = subprocess.run(["git", "-C", str(target), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert len(log.splitlines()) == 1  # nothing of the publication changed: no new commit


@pytest.mark.parametrize("where", ["source", "release", "."])
def test_the_course_itself_is_never_a_publication_folder(where, tmp_path):
    # A copy: were the guard to fail, the publication would land in it, not in the working tree.
    root = copy_course(ROOT, tmp_path / "course", CONFIG_FILES + ("release", "source", "docs", "requirements-cpu.txt"))
    with pytest.raises(CourseError, match="the course itself"):
        publish.publish(root, root / where, check=False)


def test_a_folder_that_is_no_publication_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(CourseError, match="not empty and not a publication"):
        publish.publish(ROOT, tmp_path, check=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_manifest_line_leading_out_of_the_folder_removes_nothing_there(tmp_path):
    """The manifest is a file in DIR anyone can edit: an absolute line, or one through a symlinked folder,
    names a file outside DIR, which publishing again leaves alone (and out of the commit)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("victim", "linked.txt"):
        (outside / name).write_text("keep")
    target = tmp_path / "students"
    publish.publish(ROOT, target, check=False)
    (target / "escape").symlink_to(outside, target_is_directory=True)
    (target / "release" / "stale.txt").write_text("x")
    with open(target / publish.MANIFEST, "a") as manifest:
        manifest.write(f"{outside / 'victim'}\nescape/linked.txt\nrelease/stale.txt\n")
    publish.publish(ROOT, target, git=True, check=False)
    assert [(outside / name).read_text() for name in ("victim", "linked.txt")] == ["keep", "keep"]
    assert not (target / "release" / "stale.txt").exists()  # a line inside DIR still replaces its file


def test_an_unreadable_manifest_is_one_error_naming_it(tmp_path):
    target = tmp_path / "students"
    target.mkdir()
    (target / publish.MANIFEST).write_bytes(b"release/\xff\xfe.txt\n")
    with pytest.raises(CourseError, match=re.escape(str(target / publish.MANIFEST))):
        publish.publish(ROOT, target, check=False)


@pytest.mark.parametrize("toml", ['publication = "o/n"\n', 'hub = "x"\n'])
def test_a_course_toml_setting_that_is_no_table_is_one_error_naming_it(tmp_path, toml):
    (tmp_path / "course.toml").write_text(toml)
    name = toml.partition(" ")[0]
    with pytest.raises(CourseError, match=rf"course\.toml: \[{name}\] must be a table"):
        course_settings(tmp_path)


@pytest.mark.parametrize("url", ["5", '"hub.example.edu"', "false"])
def test_a_set_hub_url_is_checked_without_a_publication_too(tmp_path, url):
    (tmp_path / "course.toml").write_text(f'[publication]\nrepository = ""\n[hub]\nurl = {url}\n')
    with pytest.raises(CourseError, match=r"course\.toml: \[hub\] url must be"):
        course_settings(tmp_path)


@pytest.mark.slow  # four publications and four sets of site sources: about three seconds
def test_the_schedule_releases_lessons_in_order_to_the_publication_and_the_site(tmp_path):
    """course.toml's [schedule], as a term runs: at each prefix of the schedule, the publication (what
    the students' repository and the student lab hold) and the site's lesson pages hold exactly the
    lessons due so far, and the site's home page links no other."""
    import datetime
    import shutil

    from perfcourse.site import build as site

    root = copy_course(ROOT, tmp_path / "course", CONFIG_FILES + ("release", "source", "docs", "requirements-cpu.txt"))
    shutil.copy2(ROOT / "README.md", root / "README.md")
    term = LESSONS[:4]
    for folder in ("source", "release"):
        for path in (root / folder).iterdir():
            if path.name not in term:
                shutil.rmtree(path)
    today = datetime.date.today()
    target = tmp_path / "students"
    for count in range(len(term) + 1):
        dates = [today - datetime.timedelta(days=30 - n) if n < count else today + datetime.timedelta(days=n + 1)
                 for n in range(len(term))]
        (root / "course.toml").write_text("[schedule]\n" + "".join(f"{lesson} = {day.isoformat()}\n"
                                                                   for lesson, day in zip(term, dates)))
        assert course_settings(root).released_by(term) == term[:count]
        if count == 0:
            with pytest.raises(CourseError, match="has released no lesson yet"):
                publish.publish(root, target, check=False)
            continue
        written = publish.publish(root, target, check=False)  # the same repository, growing as the term runs
        assert sorted({path.split("/")[1] for path in written if path.startswith("release/")}) == term[:count]
        assert sorted(p.name for p in (target / "release").iterdir()) == term[:count]
        readme = (target / "README.md").read_text()
        assert [lesson for lesson in term if f"release/{lesson}/" in readme] == term[:count]
        assert site.write_sources(root, tmp_path / "book")["lessons"] == term[:count]
        assert sorted(p.name for p in (tmp_path / "book" / "release").iterdir()) == term[:count]
        home = (tmp_path / "book" / "README.md").read_text()
        assert [lesson for lesson in LESSONS if f"](release/{lesson}/" in home] == term[:count]


def test_a_schedule_names_only_lessons_with_dates(tmp_path):
    root = copy_course(ROOT, tmp_path / "course", CONFIG_FILES + ("source",))
    (root / "course.toml").write_text('[schedule]\nperfomance-01 = 2026-09-07\nperformance-02 = "next week"\n')
    with pytest.raises(CourseError) as raised:
        course_settings(root)
    assert str(raised.value).splitlines() == [
        f"{root / 'course.toml'}: [schedule] perfomance-01: no such lesson in source/ (did you mean 'performance-01'?)",
        f"{root / 'course.toml'}: [schedule] performance-02 must be a date (as 2026-09-07, unquoted), got 'next week'"]


@pytest.fixture(scope="module")
def given_away():
    from perfcourse import giveaways

    return giveaways.find(ROOT)


def test_the_lessons_that_give_performance_01s_timer_are_found(given_away):
    """performance-01's graded timer is a given cell of later lessons (their measurements use the course's
    timer): found in each, and nothing else of the course is given away."""
    pairs = {(item.lesson, item.grade_id, item.task, item.giver) for item in given_away}
    assert pairs == {("performance-01", "timer", "Task 2", giver) for giver in (
        "performance-04", "performance-05", "performance-07", "performance-08", "performance-12", "performance-audit")}
    for item in given_away:  # the cell it names is a locked given cell holding the timer
        cell = nbformat.read(ROOT / "release" / item.giver / f"{item.giver}.ipynb", 4).cells[item.cell - 1]
        assert "def time_completed(" in cell.source and cell.metadata["nbgrader"]["locked"]
    warning = next(item for item in given_away if item.giver == "performance-04").warning()
    assert re.fullmatch(r"performance-04 gives performance-01's graded cell `timer` \(Task 2\) in its cell \d+: "
                        r"release performance-04 after performance-01's work is in \(\[schedule\] in course\.toml\)",
                        warning)


def test_a_schedule_that_releases_the_giving_lesson_later_silences_its_warning(given_away):
    import dataclasses
    import datetime

    from perfcourse import giveaways

    settings = course_settings(ROOT)
    everything = dataclasses.replace(settings, schedule=())
    assert giveaways.published_together(given_away, everything) == given_away  # all at once: every pair
    start = datetime.date(2026, 9, 7)
    givers = {item.giver for item in given_away}
    dates = {lesson: start for lesson in LESSONS} | {"performance-04": start + datetime.timedelta(days=7)}
    termly = dataclasses.replace(settings, schedule=tuple(dates.items()))
    warned = {item.giver for item in giveaways.published_together(given_away, termly)}
    assert warned == givers - {"performance-04"}
    earlier = dates | {"performance-04": start - datetime.timedelta(days=1)}  # before 01: still a giveaway
    assert "performance-04" in {item.giver for item in giveaways.published_together(
        given_away, dataclasses.replace(settings, schedule=tuple(earlier.items())))}
    unlisted = {lesson: day for lesson, day in dates.items() if lesson != "performance-04"}  # it waits
    assert "performance-04" not in {item.giver for item in giveaways.published_together(
        given_away, dataclasses.replace(settings, schedule=tuple(unlisted.items())))}
    waiting = {lesson: day for lesson, day in dates.items() if lesson != "performance-01"}  # given, yet to come
    assert giveaways.published_together(given_away, dataclasses.replace(settings, schedule=tuple(waiting.items()))) \
        == given_away


def test_code_is_compared_without_delimiters_comments_blank_lines_or_indentation():
    from perfcourse import giveaways

    source = ("def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1  # a note\n\n    s = '#kept'\n    return y\n"
              "    ### END SOLUTION\n")
    answer = giveaways.code_lines(source, ("BEGIN SOLUTION", "END SOLUTION"))
    assert answer == ("def f(x):", "y = x + 1", "s = '#kept'", "return y")
    assert giveaways.statements(source) == 4
    given = "# given\ndef   f(x):\n  y = x + 1\n  s = '#kept'\n  return y\nprint(f(1))\n"
    assert giveaways.code_lines(given)[:4] == answer


def test_a_copy_reordered_and_renamed_is_still_a_giveaway():
    """Statements compared in any order and whatever names the code binds (defs, arguments, variables,
    an import's `as`), never what it reads unbound: a module's attribute or a constant changed is other code."""
    from perfcourse import giveaways

    answer = ("import time\n\ndef time_completed(fn, *args, repeats=5):\n    ### BEGIN SOLUTION\n    samples = []\n"
              "    for _ in range(repeats):\n        start = time.perf_counter()\n"
              "        fn(*args).block_until_ready()\n"
              "        samples.append(time.perf_counter() - start)\n    return samples\n    ### END SOLUTION\n\n"
              "def middle(values):\n    return sorted(values)[len(values) // 2]\n")
    read = (giveaways.code_lines(answer, ("BEGIN SOLUTION", "END SOLUTION")), giveaways.Statements(answer))
    copied = ("def centre(xs):\n    '''The median.'''\n    return sorted(xs)[len(xs) // 2]\n\n"
              "import time as clock\n\nclass Given:\n    def timed(f, *inputs, repeats=5):\n        runs = []\n"
              "        for i in range(repeats):\n            t0 = clock.perf_counter()\n"
              "            f(*inputs).block_until_ready()\n            runs.append(clock.perf_counter() - t0)\n"
              "        return runs\n")
    assert giveaways.gives(giveaways.GivenCell.of(copied), read)
    assert giveaways.gives(giveaways.GivenCell.of(answer), read)  # word for word, by its lines
    for change in (("perf_counter", "time"), ("repeats=5", "repeats=6"), ("clock.perf_counter() - t0", "t0 - 1"),
                   ("runs.append", "runs.extend")):
        assert not giveaways.gives(giveaways.GivenCell.of(copied.replace(*change)), read), change
    split = copied.split("class Given:")  # the answer's statements in two cells: neither gives it
    assert not any(giveaways.gives(giveaways.GivenCell.of(part), read) for part in split)
