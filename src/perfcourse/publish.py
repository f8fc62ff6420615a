"""`perfcourse publish DIR`: the student publication, the one thing students get of the course.

DIR receives what a student needs and nothing else:

  README.md                         the lessons, each with its launch links, and how to start
  GUIDE.md                          the student guide (docs/students/start.md; links that lead out
                                    of the publication become plain text)
  requirements.txt                  what the lessons run on, at the course's pins
  release/<lesson>/                 every lesson's release folder (the notebook students fill in)
  .gitignore, .perfcourse-publication   checkpoints left out; the list of what this command wrote

Nothing of source/ (solutions, hidden tests), samples/, adversarial/, projects/ or the course's
package (the checks) is in it. The publication is meant for the repository that course.toml's
[publication] names, which every launch link points into (launch.py): `--git` makes DIR a git
repository (or adds a commit to it) that the instructor pushes there.

DIR may be new, empty, or an earlier publication: then only what that one wrote (its list) is
replaced, so a student's own files there (fetched lessons, their work) and a .git stay.

As a term runs, course.toml's [schedule] says which lessons have reached students: only those
are published. Nothing is published from a release/ that is not current: a lesson of source/ without its release
folder, or one that `perfcourse release --check` finds stale (against source/, or against the
launch link course.toml gives), is refused by name. A lesson the earlier publication held is never
dropped from the students' repository unless the command names it (`--remove LESSON`). A lesson
that gives another's graded answer in a given cell (giveaways.py), and that the schedule does not
release after it, is named in a warning; the publication goes ahead.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from . import giveaways
from . import launch
from . import release
from .course import CourseError, Settings, lessons, read_notebook, settings, write_atomic
from .release import COLAB_CELL_ID, released

MANIFEST = ".perfcourse-publication"
GUIDE_SOURCE = "docs/students/start.md"
GUIDE = "GUIDE.md"
# What a student installs to run the lessons on their own machine, at requirements-cpu.txt's pins.
STUDENT_PACKAGES = ("jax", "jaxlib", "numpy", "matplotlib", "jupyterlab", "ipykernel")
IGNORED = ".ipynb_checkpoints/\n__pycache__/\n"
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def _text(path: Path, why: str = "the publication needs it") -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # a UnicodeDecodeError has no strerror
        raise CourseError(f"{path}: {why} ({getattr(exc, 'strerror', None) or exc})") from None


def requirements(root: Path) -> str:
    """STUDENT_PACKAGES with their pins from requirements-cpu.txt."""
    pins = {}
    for line in _text(root / "requirements-cpu.txt").splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            pins[name.lower()] = line.strip()
    missing = [p for p in STUDENT_PACKAGES if p not in pins]
    if missing:
        raise CourseError(f"{root / 'requirements-cpu.txt'}: no pin for {', '.join(missing)}")
    return ("# What the lessons run on, at the course's pins: python -m pip install -r requirements.txt\n"
            + "".join(pins[p] + "\n" for p in STUDENT_PACKAGES))


def guide(root: Path, published: set[str]) -> str:
    """The student guide, its links made to hold in the publication: one to the course README or a
    published file points there; any other (an instructor's page) becomes its text."""
    text = _text(root / GUIDE_SOURCE)
    folder = Path(GUIDE_SOURCE).parent

    def relink(found: re.Match) -> str:
        label, target = found.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return found.group(0)
        path, _, anchor = target.partition("#")
        where = os.path.normpath((folder / path).as_posix()).replace(os.sep, "/")
        if where in published or where == "README.md":
            return f"[{label}]({where}{'#' + anchor if anchor else ''})"
        return label

    return _LINK.sub(relink, text)


def _title(nb, lesson: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.get("id") != COLAB_CELL_ID:
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            if first.startswith("# "):
                return first[2:].strip()
    return lesson


def readme(root: Path, lesson_ids: list[str], course_settings: Settings) -> str:
    rows = []
    for lesson in lesson_ids:
        path = launch.notebook_path(lesson)
        title = _title(read_notebook(released(root, lesson)), lesson).replace("|", "\\|")
        opened = " · ".join(f"[{label}]({link})" for label, link in launch.links(course_settings, lesson)) or "-"
        rows.append(f"| {title} | [{lesson}]({path}) | {opened} |")
    return "\n".join([
        "# JAX performance course",
        "",
        "The course's lesson notebooks. Open one, fill in the cells marked `YOUR CODE HERE`, and run it: "
        "its public checks say what is right so far. Your instructor grades it with further checks. "
        f"[How to work on them, step by step]({GUIDE}): Colab, JupyterLab with the course's exchange, or "
        "the course's JupyterHub.",
        "",
        "## Lessons",
        "",
        "| lesson | notebook | open |",
        "|---|---|---|",
        *rows,
        "",
        "In JupyterLab with the course's exchange (or on its JupyterHub), Nbgrader > Assignment List lists the "
        "lessons your instructor has released: it is empty until the first one is. Fetch one there and work in "
        "the copy it writes; the notebooks under `release/` are the same lessons, for reading or for Colab.",
        "",
        "## On your own machine",
        "",
        "```sh",
        "python3 -m venv .venv",
        "source .venv/bin/activate",
        "python -m pip install -r requirements.txt",
        "jupyter lab",
        "```",
        ""])


def _refuse(root: Path, target: Path) -> list[str]:
    """What an earlier publication in `target` wrote (to replace); refuses anything else."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise CourseError(f"publication folder {target}: not a folder")
    resolved = target.resolve()
    if root.is_relative_to(resolved) or any(resolved.is_relative_to((root / part).resolve()) for part in (
            "source", "release", "samples", "adversarial", "projects", "docs", "src", "tests")):
        raise CourseError(f"publication folder {target}: it would hold or replace the course itself")
    if not target.exists():
        return []
    listed = target / MANIFEST
    if listed.is_file():
        text = _text(listed, "the list of what the last publication wrote, unreadable")
        return [line for line in text.splitlines() if line.strip()]
    if any(entry.name != ".git" for entry in target.iterdir()):
        raise CourseError(f"publication folder {target}: not empty and not a publication (no {MANIFEST}); "
                          "name a new or empty folder")
    return []


def _within(target: Path, relative: str) -> Path | None:
    """Where a line of the manifest points, or None where that is outside `target`. The manifest is only
    a file in DIR: a line can be absolute, climb out, or pass through a symlinked folder. The entry's own
    folder is resolved, not the entry, so a symlink listed there is removed itself, never followed."""
    path = Path(relative)
    if path.is_absolute() or ".." in path.parts or not path.name:
        return None
    folder = (target / path).parent.resolve()
    return folder / path.name if folder.is_relative_to(target.resolve()) else None


def current_lessons(root: Path, check: bool = True, course_settings: Settings | None = None) -> list[str]:
    """The lessons to publish: those of source/ that course.toml's [schedule] has released so far
    (every one without a schedule), each with a current release folder; one CourseError naming each
    that is missing or stale (`check`: regenerated in a scratch course and compared, as
    `perfcourse release --check` does)."""
    course_settings = course_settings or settings(root)
    chosen = course_settings.released_by(lessons(root))
    if lessons(root) and not chosen:
        raise CourseError(f"{course_settings.path}: [schedule] has released no lesson yet, so there is nothing to "
                          "publish")
    problems = [f"{released(root, lesson).relative_to(root)}: missing" for lesson in chosen
                if not released(root, lesson).is_file()]
    if not problems and check:
        problems = release.stale(root, chosen)
    if not chosen:
        problems = ["source/ holds no lesson"]
    if problems:
        raise CourseError("release/ is not current, so nothing was published (run 'perfcourse release', "
                          "commit, then publish):\n" + "\n".join(problems))
    return chosen


def _dropped(earlier: list[str], lesson_ids: list[str], remove: list[str]) -> list[str]:
    """The lessons the earlier publication held that this one leaves out: each must be named in
    `remove`, and each name in `remove` must be such a lesson."""
    held = {parts[1] for parts in (Path(line).parts for line in earlier) if len(parts) > 2 and parts[0] == "release"}
    dropped = sorted(held - set(lesson_ids))
    unasked = [lesson for lesson in dropped if lesson not in remove]
    if unasked:
        raise CourseError("the earlier publication holds " + ", ".join(unasked) + ", which this one would remove "
                          "from the students' repository: publish it again (perfcourse release), or say so with "
                          + " ".join(f"--remove {lesson}" for lesson in unasked))
    wrong = [lesson for lesson in remove if lesson not in dropped]
    if wrong:
        raise CourseError("--remove " + ", ".join(wrong) + ": not a lesson the earlier publication holds and this "
                          "one leaves out" + (f" (it would leave out: {', '.join(dropped)})" if dropped else ""))
    return dropped


def publish(root: Path, target: Path, git: bool = False, remove: list[str] | None = None,
            check: bool = True, course_settings: Settings | None = None) -> list[str]:
    """Write the publication into `target`; return the paths written, relative to it. `check`:
    release/ is regenerated in a scratch course and compared first (a stale lesson is refused)."""
    root = root.resolve()
    course_settings = course_settings or settings(root)
    earlier = _refuse(root, target)
    lesson_ids = current_lessons(root, check, course_settings)
    _dropped(earlier, lesson_ids, list(remove or []))
    files: dict[str, bytes | Path] = {}
    for lesson in lesson_ids:
        folder = released(root, lesson).parent
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not path.is_symlink() and ".ipynb_checkpoints" not in relative.parts:
                files[f"release/{lesson}/{relative.as_posix()}"] = path
    files["requirements.txt"] = requirements(root).encode()
    files[".gitignore"] = IGNORED.encode()
    files[GUIDE] = guide(root, set(files)).encode()
    files["README.md"] = readme(root, lesson_ids, course_settings).encode()
    target.mkdir(parents=True, exist_ok=True)
    # The last publication's files, gone before this one's are written; a line of its list that
    # leads outside DIR is no file of it and is left alone (and out of the commit).
    earlier = [relative for relative in earlier if _within(target, relative)]
    for relative in earlier:
        old = _within(target, relative)
        if old.is_file() or old.is_symlink():
            old.unlink()
    for relative in earlier:  # a removed lesson's folders go too, where nothing of a student's is left in them
        folder = _within(target, relative).parent
        while folder != target.resolve() and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    for relative, content in files.items():
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, destination)
        else:
            write_atomic(destination, content)
    written = sorted(files)
    write_atomic(target / MANIFEST, "".join(f"{path}\n" for path in written))
    if git:
        _commit(course_settings, target, written + [MANIFEST] + earlier)
    return written


def _git(target: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(target), *args], capture_output=True, text=True)


def _commit(course_settings: Settings, target: Path, paths: list[str]) -> None:
    """Commit the publication's files in `target`, a git repository (made here when it is none)."""
    if shutil.which("git") is None:
        raise CourseError("--git: git is not installed")
    where = launch.publication(course_settings)
    if not (target / ".git").exists():
        done = _git(target, "init", "-q", "-b", where[1] if where else "main")
        if done.returncode:
            raise CourseError(f"git init in {target} failed: {done.stderr.strip()}")
    tracked = set(_git(target, "ls-files", "-z").stdout.split("\0"))
    paths = sorted({path for path in paths if (target / path).exists() or path in tracked})
    done = _git(target, "add", "--all", "--", *paths)
    if done.returncode:
        raise CourseError(f"git add in {target} failed: {done.stderr.strip()}")
    if _git(target, "diff", "--cached", "--quiet").returncode == 0:
        return  # nothing changed since the last publication
    identity = [] if _git(target, "config", "user.email").stdout.strip() else [
        "-c", "user.name=perfcourse publish", "-c", "user.email=perfcourse@localhost"]
    done = subprocess.run(["git", "-C", str(target), *identity, "commit", "-q", "-m",
                           "The course's student publication (perfcourse publish)"], capture_output=True, text=True)
    if done.returncode:
        raise CourseError(f"git commit in {target} failed: {done.stderr.strip()}")


def main(root: Path, target: Path, git: bool = False, remove: list[str] | None = None) -> int:
    course_settings = settings(root)  # read once, for every step of the publication
    written = publish(root, target, git, remove, course_settings=course_settings)
    lesson_count = len({path.split("/")[1] for path in written if path.startswith("release/")})
    print(f"wrote {target}: {lesson_count} lessons' release folders, {GUIDE}, README.md and requirements.txt "
          f"({len(written)} files; nothing of source/, samples/ or the checks)"
          + (f"; removed {', '.join(remove)}" if remove else "")
          + ("; committed: push it to the repository course.toml's [publication] names" if git else ""))
    if launch.publication(course_settings) is None:
        print("note: course.toml's [publication] repository is empty, so no launch link points here yet")
    # A warning, not a refusal: a self-paced course may release a lesson and the one it gives away at once.
    # It reads the release of lessons not yet published too, so a fault there is said, never the exit status.
    try:
        found = giveaways.find(root)
    except CourseError as exc:
        print(f"warning: no lesson's release was compared with another's graded answers: {exc}")
        found = []
    for giveaway in giveaways.published_together(found, course_settings):
        print(f"warning: {giveaway.warning()}")
    return 0
