"""source/ is output-free and valid; release/ is what nbgrader generates from it, and stays so."""
import json
import shutil
import subprocess

import nbformat
import pytest

from conftest import ROOT, perfcourse

from perfcourse import cli
from perfcourse.course import CONFIG_FILES, copy_course, lessons

LESSONS = lessons(ROOT)


@pytest.mark.parametrize("lesson", LESSONS)
def test_source_notebooks_are_valid_and_output_free(lesson):
    nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    graded = [c for c in code if c.metadata.get("nbgrader", {}).get("grade")]
    assert any("### BEGIN HIDDEN TESTS" in c.source for c in graded), "every lesson has hidden tests"


@pytest.mark.parametrize("lesson", LESSONS)
def test_release_has_no_solutions_or_hidden_tests(lesson):
    text = (ROOT / "release" / lesson / f"{lesson}.ipynb").read_text()
    nbformat.validate(nbformat.reads(text, as_version=4))
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "perfcourse.checks"):
        assert marker not in text


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_unfilled_solution_cell_names_its_task(lesson):
    nb = nbformat.read(ROOT / "release" / lesson / f"{lesson}.ipynb", as_version=4)
    solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert solutions
    for number, cell in enumerate(solutions, 1):
        assert "raise NotImplementedError()" not in cell.source, cell.source
        assert f"raise NotImplementedError('Task {number} (" in cell.source, cell.source


@pytest.mark.e2e
def test_release_is_up_to_date():
    proc = perfcourse("release", "--check", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "release: up to date" in proc.stdout


@pytest.mark.e2e
def test_a_stale_release_is_named(course):
    path = course / "source" / "performance-01" / "performance-01.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][0]["source"] = ["# performance-01, edited after the release\n"]
    path.write_text(json.dumps(nb))
    proc = perfcourse("release", "--check", "--lesson", "performance-01", cwd=course)
    assert proc.returncode == 1
    assert "release/performance-01/performance-01.ipynb: stale against source/" in proc.stdout


@pytest.mark.e2e
@pytest.mark.nightly  # about a minute on 2 cores; the graded demo grades performance-01's release (0 points)
def test_validate_invert_finds_no_test_cell_that_an_unfilled_release_passes(tmp_path):
    """`nbgrader validate --invert` on each release notebook: every test cell fails before the work is
    done (a cell that passes would make JupyterLab's Validate say "Success" for unfinished work)."""
    from nbgrader.validator import Validator

    validator = Validator(invert=True)
    for lesson in LESSONS:
        folder = shutil.copytree(ROOT / "release" / lesson, tmp_path / lesson)
        results = validator.validate(str(folder / f"{lesson}.ipynb"))
        assert not results, f"{lesson}: {results}"


def small_course(tmp_path, keep=("performance-01", "performance-02")):
    """A scratch course with only these lessons (what release and publish need, nothing graded)."""
    root = copy_course(ROOT, tmp_path / "course", CONFIG_FILES + ("source", "release", "docs", "requirements-cpu.txt"))
    for folder in ("source", "release"):
        for path in (root / folder).iterdir():
            if path.name not in keep:
                shutil.rmtree(path)
    return root


def _gradebook_rows(root) -> list:
    import sqlite3

    with sqlite3.connect(root / "gradebook.db") as db:
        return list(db.iterdump())


def _git_log(target) -> list[str]:
    return subprocess.run(["git", "-C", str(target), "log", "--format=%H"], capture_output=True, text=True,
                          check=True).stdout.split()


def _run(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.slow
def test_a_bad_source_notebook_changes_nothing_and_nbgraders_cause_is_printed(tmp_path, monkeypatch, capsys):
    """A duplicate grade_id: `perfcourse release` prints nbgrader's cause; release/, the gradebook and the
    student publication stay as they were (publish refuses, naming the lesson)."""
    root = small_course(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.delenv("PERFCOURSE_ROOT", raising=False)
    assert _run(capsys, "release")[0] == 0
    target = tmp_path / "students"
    assert _run(capsys, "publish", str(target), "--git")[0] == 0
    released = {p: p.read_bytes() for p in (root / "release").rglob("*") if p.is_file()}
    gradebook, commits = _gradebook_rows(root), _git_log(target)
    path = root / "source" / "performance-02" / "performance-02.ipynb"
    nb = json.loads(path.read_text())
    graded = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    duplicate = graded[0]["metadata"]["nbgrader"]["grade_id"]
    graded[1]["metadata"]["nbgrader"]["grade_id"] = duplicate
    path.write_text(json.dumps(nb))
    code, said = _run(capsys, "release")
    assert code == 2 and f"performance-02: ValidationError: Duplicate grade id: {duplicate}" in said, said
    assert "nothing was released" in said and "see the above traceback" not in said.lower()
    assert {p: p.read_bytes() for p in (root / "release").rglob("*") if p.is_file()} == released
    assert _gradebook_rows(root) == gradebook
    code, said = _run(capsys, "publish", str(target), "--git")
    assert code == 2 and "release/performance-02/performance-02.ipynb: source/ does not release" in said, said
    assert f"Duplicate grade id: {duplicate}" in said
    assert _git_log(target) == commits and (target / "release" / "performance-02" / "performance-02.ipynb").is_file()


@pytest.mark.slow
def test_publish_refuses_a_stale_or_incomplete_release_and_never_drops_a_lesson_unasked(tmp_path, monkeypatch, capsys):
    root = small_course(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.delenv("PERFCOURSE_ROOT", raising=False)
    target = tmp_path / "students"
    assert _run(capsys, "publish", str(target), "--git")[0] == 0
    commits = _git_log(target)
    # course.toml changed after the release: its launch link, not source/, is what is stale
    (root / "course.toml").write_text('[publication]\nrepository = "org/students"\n')
    code, said = _run(capsys, "publish", str(target), "--git")
    assert code == 2 and "Open in Colab link is not the one course.toml's [publication] gives" in said, said
    assert "stale against source/" not in said
    code, said = _run(capsys, "release", "--check")
    assert code == 1 and "stale against source/" not in said and "[publication]" in said
    assert _run(capsys, "release")[0] == 0
    shutil.rmtree(root / "release" / "performance-02")  # incomplete
    code, said = _run(capsys, "publish", str(target), "--git")
    assert code == 2 and "release/performance-02/performance-02.ipynb: missing" in said, said
    assert _git_log(target) == commits
    shutil.rmtree(root / "source" / "performance-02")  # the lesson leaves the course
    code, said = _run(capsys, "publish", str(target), "--git")
    assert code == 2 and "--remove performance-02" in said and _git_log(target) == commits, said
    code, said = _run(capsys, "publish", str(target), "--git", "--remove", "performance-02",
                      "--remove", "performance-01")
    assert code == 2 and "--remove performance-01: not a lesson" in said
    assert _run(capsys, "publish", str(target), "--git", "--remove", "performance-02")[0] == 0
    assert not (target / "release" / "performance-02").exists() and len(_git_log(target)) == 2
