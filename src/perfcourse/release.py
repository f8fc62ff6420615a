"""source/ -> release/: nbgrader's generate_assignment strips solutions and hidden tests.

A release is all or nothing. Every lesson asked for is first generated in a scratch copy of the
course, against a copy of its gradebook: a lesson nbgrader refuses (a duplicate grade_id, corrupt
nbgrader metadata) stops the release there, with nbgrader's own cause, and release/ and the
gradebook stay as they were. Then each lesson is generated in the course itself, into a staging
folder, and its folder replaces release/<lesson>/ only once nbgrader has recorded its cells.

The release notebooks are committed (students get them through the student publication,
`perfcourse publish`, or the exchange), so a check regenerates them in a scratch copy of the course
and compares.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import nbformat

from . import nbgrader_bridge
from .course import (CONFIG_FILES, CourseError, Settings, copy_course, lessons, read_notebook, settings,
                     source_notebook, write_atomic)
from .launch import colab_link

COLAB_CELL_ID = "open-in-colab"
GRADEBOOK = "gradebook.db"


def _add_colab_link(link: str | None, path: Path) -> None:
    if link is None:
        return
    nb = read_notebook(path)
    cell = nbformat.v4.new_markdown_cell(
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({link})")
    cell.id = COLAB_CELL_ID
    nb.cells.insert(0, cell)
    write_atomic(path, nbformat.writes(nb))


def _sqlite_file(url: str) -> Path | None:
    prefix = "sqlite:///"
    return Path(url[len(prefix):]) if url.startswith(prefix) and url != prefix + ":memory:" else None


def _trial(root: Path, lesson_ids: list[str]) -> list[str]:
    """Each lesson generated in a scratch course whose gradebook is a copy of the course's (a new
    one where the gradebook is no SQLite file): what nbgrader refused, one line per lesson."""
    failed = []
    with tempfile.TemporaryDirectory(prefix="perfcourse-release-") as scratch:
        scratch = copy_course(root, Path(scratch), CONFIG_FILES + ("source",))
        loaded = nbgrader_bridge.config(scratch)
        loaded.CourseDirectory.db_url = f"sqlite:///{scratch / GRADEBOOK}"  # never the course's own
        real = _sqlite_file(nbgrader_bridge.db_url(root))
        if real is not None and real.is_file():
            with sqlite3.connect(f"file:{real}?mode=ro", uri=True) as source, \
                    sqlite3.connect(scratch / GRADEBOOK) as copy:
                source.backup(copy)  # consistent even while another process writes
        for lesson in lesson_ids:
            problem = nbgrader_bridge.generate_assignment(scratch, lesson, loaded, raising=False)
            if problem:
                failed.append(f"{lesson}: {problem}")
    return failed


def generate(root: Path, lesson_ids: list[str] | None = None, course_settings: Settings | None = None) -> list[Path]:
    """Write release/<lesson>/ for each lesson and record its cells in the gradebook; all or nothing."""
    chosen = list(lesson_ids or lessons(root))
    course_settings = course_settings or settings(root)  # a bad course.toml fails here, before anything
    for lesson in chosen:
        read_notebook(source_notebook(root, lesson))  # a corrupt source fails here, by name
    refused = _trial(root, chosen)
    if refused:
        raise CourseError("nbgrader generate_assignment refused "
                          + ", ".join(line.partition(":")[0] for line in refused)
                          + "; nothing was released (release/ and the gradebook are as they were):\n"
                          + "\n".join(refused))
    return _release(root, chosen, course_settings)


def _release(root: Path, chosen: list[str], course_settings: Settings) -> list[Path]:
    """Each lesson generated into a staging folder, then moved over release/<lesson>/."""
    written = []
    target = nbgrader_bridge.step(root, "release")
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=".release-staging-"))
    try:
        loaded = nbgrader_bridge.config(root)
        loaded.CourseDirectory.release_directory = str(staging)
        for lesson in chosen:
            problem = nbgrader_bridge.generate_assignment(root, lesson, loaded, raising=False)
            if problem:  # the scratch run passed, so this is the course's own state (its gradebook)
                done = ", ".join(written_lesson.parent.name for written_lesson in written) or "none"
                raise CourseError(f"nbgrader generate_assignment {lesson} failed in {root}: {problem}; "
                                  f"release/{lesson}/ is as it was (lessons released before it: {done})")
            fresh = nbgrader_bridge.folder(root, "release", ".", lesson, loaded)
            _add_colab_link(colab_link(course_settings, lesson), fresh / f"{lesson}.ipynb")
            destination = nbgrader_bridge.folder(root, "release", ".", lesson)
            destination.parent.mkdir(parents=True, exist_ok=True)
            previous = staging / f".{lesson}.previous"
            if destination.exists():
                os.replace(destination, previous)
            try:
                os.replace(fresh, destination)
            except BaseException:  # interrupted between the two moves: the old folder goes back
                if previous.exists() and not destination.exists():
                    os.replace(previous, destination)
                raise
            written.append(released(root, lesson))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def released(root: Path, lesson: str) -> Path:
    """release/<lesson>/<lesson>.ipynb, in nbgrader's layout."""
    return nbgrader_bridge.folder(root, "release", ".", lesson) / f"{lesson}.ipynb"


def released_lessons(root: Path) -> list[str]:
    """The lessons whose release notebook exists, in the course's order; none is an error."""
    found = [lesson for lesson in lessons(root) if released(root, lesson).is_file()]
    if not found:
        raise CourseError("release/ holds no lesson notebook: run 'make release' first")
    return found


def _comparable(nb: nbformat.NotebookNode) -> list:
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in nb.cells if c.get("id") != COLAB_CELL_ID]


def _badge(nb: nbformat.NotebookNode) -> str | None:
    return next((c.source for c in nb.cells if c.get("id") == COLAB_CELL_ID), None)


def stale(root: Path, lesson_ids: list[str] | None = None) -> list[str]:
    """Lessons (all, or these) whose committed release differs from what source/ and course.toml
    generate now, each named with what differs (source/, or the launch link course.toml gives)."""
    problems = []
    course_settings = settings(root)
    with tempfile.TemporaryDirectory(prefix="perfcourse-release-") as scratch:
        scratch = copy_course(root, Path(scratch), CONFIG_FILES + ("source",))
        for lesson in lesson_ids or lessons(root):
            committed = released(root, lesson)
            try:
                _release(scratch, [lesson], course_settings)  # a scratch course: no trial run first
            except CourseError as exc:
                problems.append(f"{committed.relative_to(root)}: source/ does not release: {exc}")
                continue
            if not committed.is_file():
                problems.append(f"{committed.relative_to(root)}: missing (run 'make release')")
                continue
            fresh, kept = read_notebook(released(scratch, lesson)), read_notebook(committed)
            if _comparable(kept) != _comparable(fresh):
                problems.append(f"{committed.relative_to(root)}: stale against source/ (run 'make release')")
            elif _badge(kept) != _badge(fresh):
                problems.append(f"{committed.relative_to(root)}: its Open in Colab link is not the one course.toml's "
                                "[publication] gives now (run 'make release')")
    return problems
