"""Sample submissions: how the course proves its hidden tests.

Each sample is a small text file, samples/<lesson>/<case>.py, that says how one student's
notebook differs from the release notebook and what each grade cell must score:

    # A timer that reads the clock before the result is ready.
    # expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0
    # %% solutions
    # %% replace timer
    def time_completed(fn, *args, warm_calls=7):
        ...

Directives, applied in order to a copy of release/<lesson>/<lesson>.ipynb:
  `# %% solutions`          fill every solution cell with the source notebook's solution
  `# %% replace GRADE_ID`   the lines that follow become that cell's source
  `# %% delete GRADE_ID`    remove that cell
  `# %% metadata GRADE_ID`  the JSON object that follows is merged into the cell's nbgrader metadata
  `# %% file corrupt`       hand in a file that is not JSON instead of the notebook
  `# %% file rename NAME`   hand the notebook in under another file name
  `# %% file empty`         hand in an empty folder
  `# %% file link NAME`     also hand in NAME, a symbolic link to the path on the next line
  `# %% file fifo NAME`     also hand in NAME, a named pipe
  `# %% file text NAME`     also hand in NAME (a path below the notebook's folder), a regular
                            file holding the lines that follow
  `# %% file pad N`         the notebook's metadata holds N empty JSON objects
An empty file is the untouched release. The student id of a sample is `<prefix>-<case>`, with
prefix `sample` for samples/ and `hostile` for the adversarial catalogue in adversarial/.
`# expect: not-graded` says the submission must be refused, and `# reason: TEXT` gives text
that the grade report must show for it. `# tier: nightly` leaves a sample out of make test's
end-to-end tier (`perfcourse demo --quick`): `make demo` and the nightly tier grade it.
`# tier: demo` puts an entry of adversarial/ into `make demo`'s class beside the samples, so
that the demo's grade table and report show evidence flags, grader's notes and a refusal.
`# deserves: GRADE_ID=points ...` marks an entry of adversarial/ that the grader is known to
over-score (a known limit, named in docs/authors/checks.md): `# expect:` holds what it is graded
today, `# deserves:` what the named cells deserve; the day the grader gives that, the mark goes.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .course import CourseError, lessons, read_notebook, source_notebook, write_atomic

DIRECTIVE = re.compile(r"^# %% (solutions|replace|delete|metadata|file)(?: (\S+(?: \S+)?))?\s*$")
EXPECT = re.compile(r"^# expect:(.*)$")
REASON = re.compile(r"^# reason:(.*)$")
DESERVES = re.compile(r"^# deserves:(.*)$")
NIGHTLY = "# tier: nightly"  # graded by `make demo` and the nightly tier, not by make test's end-to-end tier
DEMO = "# tier: demo"  # a hostile entry that `make demo` grades beside the samples
SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


@dataclass
class Sample:
    lesson: str
    case: str
    path: Path
    description: str
    expected: dict[str, float] | None  # None: the submission must be refused
    steps: list[tuple[str, str | None, str]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    prefix: str = "sample"
    nightly: bool = False  # `# tier: nightly`: left out of `perfcourse demo --quick`
    demo: bool = False  # `# tier: demo`: an adversarial/ entry that `perfcourse demo` grades too
    deserved: dict[str, float] = field(default_factory=dict)  # `# deserves:`: a known limit's cells

    @property
    def student(self) -> str:
        return f"{self.prefix}-{self.case}"


def parse(path: Path, lesson: str, prefix: str = "sample") -> Sample:
    lines = path.read_text(encoding="utf-8").splitlines()
    description, expected, steps, reasons, deserved = [], {}, [], [], {}
    current, nightly, demo = None, False, False
    for number, line in enumerate(lines, 1):
        directive = DIRECTIVE.match(line)
        if directive:
            verb, target = directive.groups()
            if (verb == "solutions") != (target is None):
                raise CourseError(f"{path}:{number}: '# %% {verb}' " +
                                  ("takes no grade id" if verb == "solutions" else "needs a grade id"))
            current = [verb, target, []]
            steps.append(current)
        elif current is not None:
            current[2].append(line)
        elif line.strip() == NIGHTLY:
            nightly = True
        elif line.strip() == DEMO:
            demo = True
        elif (match := REASON.match(line)):
            reasons.append(match.group(1).strip())
        elif (match := EXPECT.match(line)) and match.group(1).split() == ["not-graded"]:
            expected = None
        elif (match := EXPECT.match(line) or DESERVES.match(line)):
            scores = expected if EXPECT.match(line) else deserved
            for item in match.group(1).split():
                cell, _, points = item.partition("=")
                try:
                    scores[cell] = float(points)
                except ValueError:
                    raise CourseError(f"{path}:{number}: expected 'grade_id=points', got {item!r}") from None
        elif line.startswith("#"):
            description.append(line.lstrip("# ").strip())
    return Sample(lesson, path.stem, path, " ".join(description).strip(), expected,
                  [(verb, target, "\n".join(body).strip("\n")) for verb, target, body in steps],
                  reasons, prefix, nightly, demo, deserved)


def discover(root: Path, lesson_ids: list[str] | None = None, folder: str = "samples",
             prefix: str = "sample") -> list[Sample]:
    found = []
    for lesson in lesson_ids or lessons(root):
        where = root / folder / lesson
        found += [parse(p, lesson, prefix) for p in sorted(where.glob("*.py"))] if where.is_dir() else []
    return found


def _strip_solution_markers(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not SOLUTION_MARKERS.match(line))


def build(root: Path, sample: Sample) -> nbformat.NotebookNode:
    """The student's notebook: the release with the sample's edits applied."""
    from .release import released

    nb = read_notebook(released(root, sample.lesson))
    source = read_notebook(source_notebook(root, sample.lesson))
    solutions = {c.metadata["nbgrader"]["grade_id"]: _strip_solution_markers(c.source)
                 for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")}

    def cell_index(grade_id: str) -> int:
        for i, c in enumerate(nb.cells):
            if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
                return i
        raise CourseError(f"{sample.path}: no cell with grade id {grade_id!r} in the release notebook")

    for verb, target, body in sample.steps:
        if verb == "solutions":
            for c in nb.cells:
                grade_id = c.metadata.get("nbgrader", {}).get("grade_id")
                if grade_id in solutions:
                    c.source = solutions[grade_id]
        elif verb == "replace":
            nb.cells[cell_index(target)].source = body
        elif verb == "metadata":
            try:
                nb.cells[cell_index(target)].metadata["nbgrader"].update(json.loads(body))
            except json.JSONDecodeError as exc:
                raise CourseError(f"{sample.path}: '# %% metadata {target}' needs a JSON object ({exc})") from None
        elif verb == "delete":
            del nb.cells[cell_index(target)]
    return nb


def write_submissions(root: Path, samples: list[Sample], submitted: Path | None = None) -> list[Path]:
    """Put each sample where nbgrader looks: submitted/<student>/<lesson>/<lesson>.ipynb (or under `submitted`)."""
    from .nbgrader_bridge import folder as course_folder

    paths = []
    for sample in samples:
        folder = (submitted / sample.student / sample.lesson if submitted is not None
                  else course_folder(root, "submitted", sample.student, sample.lesson))
        files = dict((target.split(" ", 1) + [""])[:2] for verb, target, _ in sample.steps if verb == "file")
        folder.mkdir(parents=True, exist_ok=True)
        if "empty" in files:
            paths.append(folder)
            continue
        target = folder / (files.get("rename") or f"{sample.lesson}.ipynb")
        text = "{ this is not a notebook" if "corrupt" in files else nbformat.writes(build(root, sample))
        if "pad" in files:  # N empty objects in the notebook's metadata, written as text, never built
            padding = ",".join(["{}"] * int(files["pad"]))
            text = text.replace('\n "metadata": {', '\n "metadata": {"padding": [' + padding + "],", 1)
        write_atomic(target, text)
        paths.append(target)
        for verb, spec, body in sample.steps:
            kind, _, name = (spec or "").partition(" ")
            if verb == "file" and kind in ("link", "fifo", "text"):
                extra = folder / name
                extra.parent.mkdir(parents=True, exist_ok=True)
                extra.unlink(missing_ok=True)
                if kind == "link":
                    os.symlink(body.strip(), extra)
                elif kind == "fifo":
                    os.mkfifo(extra)
                else:
                    extra.write_text(body + "\n", encoding="utf-8")
    return paths
