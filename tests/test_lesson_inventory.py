"""Every lesson has everything docs/authors/lesson.md's checklist asks of a new one.

A lesson added without one of its parts fails here, naming the part, before any notebook runs:
its source and release notebooks, its check module, its test module, its sample class
(the solution, the release, a second correct approach, at least one wrong one), its CPU artifact,
and its rows in the README and in docs/authors/checks.md and samples.md.
"""
import re

import pytest
from conftest import ROOT

LESSONS = sorted(path.name for path in (ROOT / "source").iterdir() if path.is_dir())

# The lessons whose tests live under another name.
TEST_MODULE: dict[str, str] = {}
# performance-01's row in checks.md describes its workload check; its timer checks are checks/timing.py.
CHECK_MODULE = {"performance-01": "timing"}


def check_module(lesson: str) -> str | None:
    """The check module docs/authors/checks.md names on the lesson's row (`checks/NAME.py`)."""
    if lesson in CHECK_MODULE:
        return CHECK_MODULE[lesson]
    for line in (ROOT / "docs/authors/checks.md").read_text().splitlines():
        if line.startswith(f"| {lesson} "):
            found = re.search(r"`checks/(\w+)\.py`", line.split("|")[1])
            return found.group(1) if found else None
    return None


def expected_scores(sample) -> dict:
    """A sample's '# expect: cell=points ...' line, as a dict ({} without one)."""
    if not sample.is_file():
        return {}
    for line in sample.read_text().splitlines():
        if line.startswith("# expect:"):
            return dict(item.split("=", 1) for item in line[len("# expect:"):].split() if "=" in item)
    return {}


def doc_row(path: str, lesson: str) -> bool:
    pattern = re.compile(rf"^\|\s*\[?`?{re.escape(lesson)}\b")
    return any(pattern.match(line) for line in (ROOT / path).read_text().splitlines())


def test_the_course_has_lessons():
    assert len(LESSONS) >= 13, LESSONS


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_part_of_the_lesson_is_there(lesson):
    missing = []
    for part in (f"source/{lesson}/{lesson}.ipynb", f"release/{lesson}/{lesson}.ipynb",
                 f"samples/{lesson}/solution.py", f"samples/{lesson}/release.py",
                 f"samples/{lesson}/alternative.py",
                 f"artifacts/cpu/{lesson}.json", f"artifacts/cpu/{lesson}.png", f"artifacts/cpu/{lesson}.alt.txt"):
        if not (ROOT / part).is_file():
            missing.append(part)
    full = expected_scores(ROOT / "samples" / lesson / "solution.py")
    wrong = [p for p in (ROOT / "samples" / lesson).glob("*.py")
             if p.stem not in ("solution", "release") and expected_scores(p) not in ({}, full)]
    if not wrong:
        missing.append(f"samples/{lesson}/: a wrong sample (one whose '# expect:' line loses points)")
    name = TEST_MODULE.get(lesson, f"test_{lesson.replace('-', '_')}.py")
    if not (ROOT / "tests" / name).is_file():
        missing.append(f"tests/{name}")
    for doc in ("README.md", "docs/authors/samples.md"):
        if not doc_row(doc, lesson):
            missing.append(f"{doc}: the lesson's row")
    module = check_module(lesson)
    if module is None:
        missing.append("docs/authors/checks.md: the lesson's row naming its `checks/NAME.py`")
    else:
        # A probe (kernel/probes/NAME.py) only where the checks call into the student's kernel.
        if not (ROOT / f"src/perfcourse/checks/{module}.py").is_file():
            missing.append(f"src/perfcourse/checks/{module}.py")
    assert not missing, f"{lesson} lacks: " + "; ".join(missing)
