"""Bad input: one clear line naming what is wrong, a non-zero exit, nothing half-written."""
import json
import subprocess

import pytest


@pytest.fixture
def perfcourse(monkeypatch, capsys):
    """`perfcourse ARGS` run in this process (no interpreter start per call), as a CompletedProcess."""
    from perfcourse.cli import main

    def run(*args, cwd):
        monkeypatch.chdir(cwd)
        try:
            status = main(list(args))
        except SystemExit as exc:
            status = exc.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, status, out, err)
    return run


def one_error_line(proc):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("perfcourse: error: "), proc.stderr
    return lines[0]


def test_unknown_lesson(course, perfcourse):
    line = one_error_line(perfcourse("artifacts", "--lesson", "performance-99", cwd=course))
    assert "unknown lesson 'performance-99'" in line and "performance-01" in line


def test_unknown_kernel_writes_nothing(course, perfcourse):
    before = (course / "artifacts" / "cpu" / "performance-01.json").read_bytes()
    line = one_error_line(perfcourse("artifacts", "--kernel", "jax-nowhere", cwd=course))
    assert "unknown kernel 'jax-nowhere'" in line
    assert (course / "artifacts" / "cpu" / "performance-01.json").read_bytes() == before


def test_corrupt_source_notebook_writes_nothing(course, perfcourse):
    path = course / "source" / "performance-01" / "performance-01.ipynb"
    path.write_text(path.read_text()[:500])
    before = (course / "artifacts" / "cpu" / "performance-01.json").read_bytes()
    for args in (("artifacts",), ("release",), ("artifacts", "--check")):
        line = one_error_line(perfcourse(*args, cwd=course))
        assert "source/performance-01/performance-01.ipynb: not a notebook" in line
    assert (course / "artifacts" / "cpu" / "performance-01.json").read_bytes() == before
    assert not list((course / "artifacts" / "cpu").glob(".*tmp"))


def test_invalid_notebook_structure(course, perfcourse):
    path = course / "source" / "performance-01" / "performance-01.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][0]["cell_type"] = "diagram"
    path.write_text(json.dumps(nb))
    line = one_error_line(perfcourse("release", cwd=course))
    assert "performance-01.ipynb: invalid notebook" in line


def test_outside_the_course(tmp_path, perfcourse):
    line = one_error_line(perfcourse("grade", cwd=tmp_path))
    assert "not inside the course" in line
