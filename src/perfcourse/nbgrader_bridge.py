"""The one place the course talks to nbgrader: its configuration, its folders, its apps, its gradebook.

Everything goes through nbgrader's own objects: the configuration a plain `nbgrader` run in the
course root reads (nbgrader_config.py -> grader_config.py), `CourseDirectory` for every folder of
nbgrader's layout, `NbGraderAPI` for generate_assignment and autograde, and the gradebook and
its CSV export plugin for scores, so the course's grade table says what `nbgrader export` says,
late penalties included.
"""
from __future__ import annotations

import csv
import functools
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import CourseError

# nbgrader's `nbgrader db upgrade` starts `alembic` by name, and Jupyter starts kernels through
# this environment's executables: this environment's bin/ comes first on PATH, in this process
# and in every nbgrader run it starts.
TOOLS = str(Path(sys.executable).parent)


@functools.cache
def newest_migration() -> str:
    """The revision nbgrader stamps on a new gradebook: the head of its own migration scripts."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


def migrations_in_process() -> None:
    """nbgrader asks an `alembic heads` process for that revision each time it makes a gradebook
    (about 0.5 CPU-s; every scratch course, every Dask task): read it here instead, once."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = newest_migration


def tools_on_path() -> None:
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[:1] != [TOOLS]:
        os.environ["PATH"] = os.pathsep.join([TOOLS, path]) if path else TOOLS


def nbgrader_env() -> dict:
    """The environment for a `python -m nbgrader` subprocess (plain nbgrader, as an instructor runs it)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([TOOLS, env.get("PATH", "")])
    return env


def config(root: Path):
    """The configuration a plain `nbgrader` run in `root` sees (nbgrader_config.py -> grader_config.py)."""
    from traitlets.config.loader import PyFileConfigLoader

    if not (Path(root) / "nbgrader_config.py").is_file():
        raise CourseError(f"{Path(root) / 'nbgrader_config.py'}: missing (nbgrader reads the course's "
                          "grader_config.py through it)")
    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    loaded.CourseDirectory.root = str(root)
    return loaded


def coursedir(root: Path, loaded=None):
    from nbgrader.coursedir import CourseDirectory

    return CourseDirectory(config=loaded if loaded is not None else config(root))


def folder(root: Path, kind: str, student: str, lesson: str, loaded=None) -> Path:
    """A lesson's folder in nbgrader's layout: kind is source, release, submitted, autograded or feedback."""
    directory = coursedir(root, loaded)
    return Path(directory.format_path(getattr(directory, f"{kind}_directory"), student, lesson))


def step(root: Path, kind: str, loaded=None) -> Path:
    """The folder of one step for the whole class (submitted/, autograded/, ...), in which
    nbgrader's default layout {nbgrader_step}/{student_id}/{assignment_id} has a folder per student."""
    directory = coursedir(root, loaded)
    return Path(directory.root) / getattr(directory, f"{kind}_directory")


def db_url(root: Path) -> str:
    return coursedir(root).db_url


def creates_students(root: Path, loaded=None) -> bool:
    """Autograde.create_student: whether grading may add a student the gradebook does not list."""
    from nbgrader.converters import Autograde

    loaded = loaded if loaded is not None else config(root)
    return Autograde(config=loaded).create_student


def api(root: Path, loaded=None):
    from nbgrader.apps import NbGraderAPI

    tools_on_path()
    migrations_in_process()
    loaded = loaded if loaded is not None else config(root)
    return NbGraderAPI(coursedir=coursedir(root, loaded), config=loaded)


def generate_assignment(root: Path, lesson: str, loaded=None, raising: bool = True) -> str | None:
    """nbgrader generate_assignment: release/<lesson>/ and the lesson's cells in the gradebook.
    Its failure with nbgrader's own cause: raised, or returned (None: it succeeded)."""
    result = api(root, loaded).generate_assignment(lesson, force=True, create=True)
    if result.get("success"):
        return None
    if raising:
        raise CourseError(f"nbgrader generate_assignment {lesson} failed in {root}: {cause(result)}")
    return cause(result)


# An exception line of a traceback nbgrader logs ("nbgrader.nbgraderformat.common.ValidationError:
# Duplicate grade id: task-1"), and its own closing words, which name no cause.
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<name>[A-Za-z_]\w*(?:Error|Exception)): (?P<what>.+)$")
_NO_CAUSE = ("Please see the", "There was an error processing")


def cause(result: dict) -> str:
    """Why nbgrader failed, in its own words: each distinct exception a traceback it logged ends
    with (the cell, the grade_id), else its error lines; never only "see the above traceback"."""
    text = (result.get("log") or "") + "\n" + (result.get("error") or "")
    found = []
    for line in text.splitlines():
        line = line.strip().removeprefix("[ERROR] ")
        matched = _RAISED.match(line)
        if matched and not any(words in line for words in _NO_CAUSE):
            said = f"{matched['name']}: {matched['what']}"
            if said not in found and not any(said in earlier for earlier in found):
                found.append(said)
    if not found:
        found = [line.strip().removeprefix("[ERROR] ") for line in text.splitlines()
                 if line.strip().startswith("[ERROR]") and not any(w in line for w in _NO_CAUSE)]
    return "; ".join(found)[:1000] or failure(result)


def autograde(root: Path, lesson: str, student: str, loaded) -> str | None:
    """nbgrader autograde for one student's lesson, honouring Autograde.create_student; the failure, or None."""
    result = api(root, loaded).autograde(lesson, student, force=True, create=creates_students(root, loaded))
    return None if result.get("success") else failure(result)


# The grader's log line when a notebook cannot be graded at all (grading/execute.py writes it, the
# reason in words after it); `failure` reads it back for the grade report.
NOT_GRADED = "perfcourse could not grade this notebook: "


def failure(result: dict) -> str:
    """The line of an NbGraderAPI result that says why it failed."""
    text = (result.get("error") or "") + "\n" + (result.get("log") or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):  # the grader's own reason, when it gave one
        if NOT_GRADED in line:
            return line.partition(NOT_GRADED)[2][:300]
    for line in reversed(lines):
        if line.startswith(("RuntimeError", "ValueError", "KeyError", "nbformat", "json", "OSError")) \
                or "Error:" in line or line.startswith("[ERROR]"):
            return line.removeprefix("[ERROR] ")[:300]
    return (lines[-1] if lines else "nbgrader reported a failure")[:300]


# --- the gradebook -------------------------------------------------------------------------------
def gradebook(root: Path):
    from nbgrader.api import Gradebook

    tools_on_path()
    migrations_in_process()
    return Gradebook(db_url(root), coursedir(root).course_id)


@dataclass
class NotebookScore:
    student: str
    lesson: str
    score: float
    max_score: float
    cells: dict[str, float]  # grade_id -> points earned


def notebook_score(root: Path, lesson: str, student: str) -> NotebookScore | None:
    """The autograded score of one student's lesson notebook, or None when nbgrader has none."""
    return notebook_scores(root, [(student, lesson)])[(student, lesson)]


def notebook_scores(root: Path, notebooks: list[tuple[str, str]]) -> dict[tuple[str, str], NotebookScore | None]:
    """notebook_score for each (student, lesson), read in one gradebook session: opening the
    gradebook costs more than reading a notebook's grades, and a class has hundreds."""
    from nbgrader.api import MissingEntry

    found: dict[tuple[str, str], NotebookScore | None] = {}
    with gradebook(root) as gb:
        for student, lesson in notebooks:
            try:
                nb = gb.find_submission_notebook(lesson, lesson, student)
            except MissingEntry:
                found[(student, lesson)] = None
                continue
            cells = {grade.name: float(grade.score) for grade in nb.grades}
            found[(student, lesson)] = NotebookScore(student, lesson, float(nb.score), float(nb.max_score), cells)
    return found


def missing_assignments(root: Path, lessons: list[str]) -> list[str]:
    from nbgrader.api import MissingEntry

    missing = []
    with gradebook(root) as gb:
        for lesson in lessons:
            try:
                gb.find_assignment(lesson)
            except MissingEntry:
                missing.append(lesson)
    return missing


def students(root: Path) -> set[str]:
    with gradebook(root) as gb:
        return {student.id for student in gb.students}


def add_students(root: Path, student_ids: list[str]) -> None:
    """Each student not yet in the gradebook added, in one session (as `nbgrader db student add`).
    nbgrader's autograde adds a student it does not find (Autograde.create_student); two of one
    student's notebooks graded at once would both try, and one would fail on the duplicate."""
    from nbgrader.api import MissingEntry

    with gradebook(root) as gb:
        for student in student_ids:
            try:
                gb.find_student(student)
            except MissingEntry:
                gb.add_student(student)


def export(root: Path, lessons: list[str], student_ids: list[str]) -> dict[tuple[str, str], dict]:
    """nbgrader's CSV export of these lessons and students, by (student, lesson).

    The rows are what `nbgrader export` writes: raw_score, late_submission_penalty, score (the
    raw score less the penalty, never below 0), max_score, timestamp. A student the gradebook
    does not list has no row.
    """
    from nbgrader.plugins import CsvExportPlugin

    with tempfile.TemporaryDirectory(prefix="perfcourse-export-") as scratch:
        target = Path(scratch) / "grades.csv"
        plugin = CsvExportPlugin(to=str(target), assignment=list(lessons), student=list(student_ids))
        with gradebook(root) as gb:
            plugin.export(gb)
        with open(target, newline="", encoding="utf-8") as handle:
            return {(row["student_id"], row["assignment"]): row for row in csv.DictReader(handle)}
