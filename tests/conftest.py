"""Shared fixtures: the course root, scratch copies of the course, and the tool as a subprocess."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import perfcourse.startup  # noqa: F401,I001 (before anything that imports nbformat, and so jsonschema)
from perfcourse.course import copy_course as course_copy

ROOT = Path(__file__).resolve().parents[1]
# Copies of the seed artifacts the course was created from (../shared/seeds/ in the course's
# workspace), kept here so the suite stands alone: one JSON artifact per lesson that has one,
# and the performance-audit project's student text.
SEEDS = ROOT / "tests" / "data" / "seeds"


def seed(lesson: str) -> dict:
    """The seed artifact of a lesson, from tests/data/seeds/."""
    path = SEEDS / f"{lesson}.json"
    if not path.is_file():
        raise LookupError(f"no seed artifact for {lesson} in {SEEDS}")
    return json.loads(path.read_text(encoding="utf-8"))


def copy_course(target: Path) -> Path:
    """A scratch course with the committed parts only (no gradebook, submissions or outputs)."""
    return course_copy(ROOT, target)


def perfcourse(*args: str, cwd: Path, check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "perfcourse.cli", *args], cwd=cwd,
                          text=True, capture_output=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"perfcourse {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def course(tmp_path) -> Path:
    return copy_course(tmp_path / "course")


@pytest.fixture(scope="session")
def graded_demo(tmp_path_factory):
    """One scratch course on which `perfcourse demo` has run: release, sample class, autograde.

    The adversarial class is graded later in this same course (tests/test_adversarial.py), so the
    demo's grades.csv is kept here as the demo wrote it.
    """
    root = copy_course(tmp_path_factory.mktemp("demo") / "course")
    proc = perfcourse("demo", cwd=root)
    grades = (root / "grades.csv").read_text() if (root / "grades.csv").is_file() else ""
    return root, proc, grades


def kernelspec_dir(base: Path, name: str, python: str, env: dict) -> Path:
    """A Jupyter data directory holding one kernelspec; put it on JUPYTER_PATH to use the kernel."""
    folder = base / "kernels" / name
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python", "env": env,
    }))
    return base
