"""The course's layout on disk, and the errors and file writes every step shares."""
from __future__ import annotations

import datetime
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import CourseError  # every step imports it from here, beside the layout

if TYPE_CHECKING:  # for the annotations only: read_notebook imports nbformat when it runs
    import nbformat

GRADER_CONFIG = "grader_config.py"
COURSE_SETTINGS = "course.toml"
# The course's configuration files, and everything committed that a scratch copy of the course needs.
CONFIG_FILES = (GRADER_CONFIG, "nbgrader_config.py", COURSE_SETTINGS)
COURSE_PARTS = CONFIG_FILES + ("source", "release", "samples", "adversarial", "artifacts", "docs",
                               "requirements-cpu.txt")
ASSIGNMENT_PREFIXES = ("performance-",)
# Cells that only draw the lesson's figure (and its drawing code): the artifact tool and students
# run them; grading does not, since figures earn no points and compute nothing a check needs.
FIGURE_TAG = "figure"


def find_root(start: Path | None = None) -> Path:
    """The course root: PERFCOURSE_ROOT, or the nearest directory upwards holding grader_config.py."""
    env = os.environ.get("PERFCOURSE_ROOT")
    if env:
        root = Path(env).resolve()
        if not (root / GRADER_CONFIG).is_file():
            raise CourseError(f"PERFCOURSE_ROOT={env}: no {GRADER_CONFIG} there")
        return root
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / GRADER_CONFIG).is_file():
            return candidate
    raise CourseError(f"{here}: not inside the course (no {GRADER_CONFIG} here or above)")


# course.toml's known sections and keys, each with the type its value must have. Anything else is
# an error naming the closest known name, so a typo ([publicaton], repositry = ...) is never a
# setting silently left at its default.
KNOWN_SETTINGS = {
    "publication": {"repository": str, "branch": str},
    "hub": {"url": str},
    "schedule": {},  # lesson id = its release date: its keys are the lessons of source/
}
# Sections the course once read, with what replaced them.
MOVED_SETTINGS = {"colab": "[colab] repository is now [publication] repository, the repository students get "
                           "(perfcourse publish writes it): move the setting there"}


@dataclass(frozen=True)
class Settings:
    """course.toml, read and validated once: what every stage that needs a setting receives."""

    path: Path
    repository: str = ""  # [publication]: "owner/name" of the student publication, "" for none
    branch: str = "main"
    hub_url: str = ""     # [hub] url, "" for none
    # [schedule]: (lesson, date) in date order; empty: every lesson is released from the start
    schedule: tuple[tuple[str, datetime.date], ...] = ()

    def released_by(self, lesson_ids: list[str], today: datetime.date | None = None) -> list[str]:
        """The lessons (of `lesson_ids`, in their order) the schedule has released by `today`: all of
        them without a schedule; with one, those whose date has come (a lesson it does not list waits)."""
        if not self.schedule:
            return list(lesson_ids)
        today = today or datetime.date.today()
        due = {lesson for lesson, day in self.schedule if day <= today}
        return [lesson for lesson in lesson_ids if lesson in due]


def _closest(name: str, known) -> str:
    import difflib

    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    return f" (did you mean {found[0]!r}?)" if found else f" (known: {', '.join(sorted(known))})"


def settings(root: Path) -> Settings:
    """course.toml, the course's own settings, validated: one CourseError naming the file and
    each problem on a line of its own (a missing file, invalid TOML, an unknown section or key
    with the closest known one, a value of the wrong type or form)."""
    import re
    import tomllib

    path = Path(root) / COURSE_SETTINGS
    if not path.is_file():
        raise CourseError(f"{path}: missing: the course's settings file (its sections [publication] and [hub] "
                          "may be empty: copy it from the course's repository)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CourseError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise CourseError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    problems, values = [], {}
    for name, table in data.items():
        if name in MOVED_SETTINGS:
            problems.append(MOVED_SETTINGS[name])
            continue
        if name not in KNOWN_SETTINGS:
            problems.append(f"[{name}]: unknown section{_closest(name, KNOWN_SETTINGS)}")
            continue
        if not isinstance(table, dict):
            problems.append(f"[{name}] must be a table, got {table!r}")
            continue
        if name == "schedule":
            problems += _schedule_problems(root, table)
            continue
        for key, value in table.items():
            kind = KNOWN_SETTINGS[name].get(key)
            if kind is None:
                problems.append(f"[{name}] {key}: unknown key{_closest(key, KNOWN_SETTINGS[name])}")
            elif not isinstance(value, kind):
                problems.append(f"[{name}] {key} must be a {kind.__name__}, got {value!r}")
            else:
                values[(name, key)] = value
    repository = values.get(("publication", "repository"), "")
    branch = values.get(("publication", "branch"), "main")
    url = values.get(("hub", "url"), "")
    if repository and not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
        problems.append(f"[publication] repository must be 'owner/name', got {repository!r}")
    if not branch or any(ch.isspace() for ch in branch):
        problems.append(f"[publication] branch must be a branch name, got {branch!r}")
    # A set url is checked even without a publication, so a wrong one is found before it is used.
    if url and (not url.startswith(("https://", "http://")) or any(ch.isspace() for ch in url)):
        problems.append(f"[hub] url must be the hub's http(s) address, got {url!r}")
    if problems:
        raise CourseError("\n".join(f"{path}: {problem}" for problem in problems))
    schedule = tuple(sorted(data.get("schedule", {}).items(), key=lambda item: (item[1], item[0])))
    return Settings(path, repository, branch, url, schedule)


def _schedule_problems(root: Path, table: dict) -> list[str]:
    """[schedule]: each key a lesson of source/ (else the closest one is named), each value a date."""
    problems = []
    known = lessons(root) if table else []
    for key, value in table.items():
        if key not in known:
            problems.append(f"[schedule] {key}: no such lesson in source/{_closest(key, known)}")
        elif not isinstance(value, datetime.date) or isinstance(value, datetime.datetime):
            problems.append(f"[schedule] {key} must be a date (as 2026-09-07, unquoted), got {value!r}")
    return problems


def lessons(root: Path) -> list[str]:
    """Assignment ids in source/: each is a folder holding a notebook of the same name."""
    from .nbgrader_bridge import step

    source = step(root, "source")
    return sorted(
        p.name for p in source.iterdir()
        if p.is_dir() and (p / f"{p.name}.ipynb").is_file()
    ) if source.is_dir() else []


def source_notebook(root: Path, lesson: str) -> Path:
    known = lessons(root)
    if lesson not in known:
        raise CourseError(
            f"unknown lesson {lesson!r}: source/ has {', '.join(known) or 'no lessons'}"
        )
    from .nbgrader_bridge import folder

    return folder(root, "source", ".", lesson) / f"{lesson}.ipynb"


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read and validate a notebook, or raise one CourseError naming the file and the fault."""
    import nbformat  # here, not above: the sandbox launcher imports this module and never reads notebooks

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CourseError(f"{path}: notebook not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(f"{path}: cannot read notebook ({exc})") from None
    shape = _shape_fault(text)
    if shape:
        raise CourseError(f"{path}: not a notebook ({shape})")
    try:
        nb = nbformat.reads(text, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError) as exc:
        raise CourseError(f"{path}: not a notebook, the JSON is corrupt ({exc})") from None
    except Exception as exc:  # nbformat raises several kinds for malformed content
        raise CourseError(f"{path}: not a notebook ({exc})") from None
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        raise CourseError(f"{path}: invalid notebook ({exc.message})") from None
    return nb


def _shape_fault(text: str) -> str | None:
    """What makes JSON text no notebook at its top level, in the notebook's own words (nbformat
    would say "'int' object is not iterable"); None where the shape is right or the JSON is not
    JSON (nbformat says that)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None

    def kind(value) -> str:
        return {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(
            type(value), "a number")

    if not isinstance(data, dict):
        return f"the file holds {kind(data)}, where a notebook is a JSON object"
    for key, want in (("cells", list), ("metadata", dict)):
        if key in data and not isinstance(data[key], want):
            return f"its \"{key}\" is {kind(data[key])}, where it must be {kind(want())}"
    for number, cell in enumerate(data.get("cells") or [], 1):
        if not isinstance(cell, dict):
            return f"its cell {number} is {kind(cell)}, where a cell is a JSON object"
        if "metadata" in cell and not isinstance(cell["metadata"], dict):
            return f"the metadata of its cell {number} is {kind(cell['metadata'])}, where it must be an object"
    return None


def copy_course(root: Path, target: Path, parts: tuple[str, ...] = COURSE_PARTS) -> Path:
    """A scratch course holding `parts` of the course at `root` (no gradebook, submissions or outputs)."""
    import shutil

    target.mkdir(parents=True, exist_ok=True)
    for part in parts:
        src = root / part
        if src.is_dir():
            shutil.copytree(src, target / part)
        elif src.is_file():
            shutil.copy2(src, target / part)
    return target


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a file so readers see the old content or the new, never half of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
