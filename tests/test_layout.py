"""The package's floors: every import runs sideways or down, none up, and no two modules import each other.

docs/authors/code.md draws the same floors for people. Every import counts, at the top of a module or
inside a function, `if TYPE_CHECKING:` blocks included: a lazy import running up is still an arrow up.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from conftest import ROOT

SOURCE = ROOT / "src"
PACKAGE = "perfcourse"
# Lowest first. A module sits on the floor of the longest prefix naming it; each floor may import
# its own and the ones below. The runtimes at the bottom (channel, kernel) run in the student's
# process and import nothing of the host's side.
FLOORS = [
    ("the ground: the wire and what runs in the student's kernel",
     ["perfcourse", "perfcourse.errors", "perfcourse.startup", "perfcourse.channel", "perfcourse.kernel"]),
    ("the course as data: its layout, nbgrader's folders and apps, kernel specs",
     ["perfcourse.course", "perfcourse.nbgrader_bridge", "perfcourse.kernels", "perfcourse.stubs",
      "perfcourse.launch"]),
    ("the trusted side: the hidden checks", ["perfcourse.checks"]),
    ("lessons and release: source/ -> release/, samples, solved runs, reference artifacts",
     ["perfcourse.release", "perfcourse.samples", "perfcourse.solved", "perfcourse.artifacts",
      "perfcourse.publish", "perfcourse.giveaways"]),
    ("grade: submitted/ -> autograded/ and the gradebook", ["perfcourse.grading"]),
    ("report: the class's results, read after grading", ["perfcourse.report"]),
    ("site: the course's pages", ["perfcourse.site"]),
    ("the verbs and the tools around them", ["perfcourse.cli", "perfcourse.busy", "perfcourse.student_lab"]),
]
# The runtimes import only within themselves (and the ground's error type): they are loaded into
# the student's kernel, which has none of the host's side.
RUNTIMES = {"perfcourse.channel": ("perfcourse.channel",),
            "perfcourse.kernel": ("perfcourse.kernel", "perfcourse.channel")}


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted((SOURCE / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


@functools.cache
def imports() -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports, anywhere in its text."""
    known = modules()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    arrows = {}
    for name, (path, package) in known.items():
        here = name if package else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(resolve(a.name) for a in node.names if a.name.split(".")[0] == PACKAGE)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    stem = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join(stem + ([node.module] if node.module else []))
                if base.split(".")[0] != PACKAGE:
                    continue
                for alias in node.names:  # `from . import x` names a module; `from .m import f`, m
                    targets.add(resolve(f"{base}.{alias.name}") if f"{base}.{alias.name}" in known else resolve(base))
        targets.discard(None)
        targets.discard(name)
        arrows[name] = targets
    return arrows


def floor(module: str) -> int | None:
    best, level = "", None
    for number, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            below = module.startswith(prefix + ".") and prefix != PACKAGE  # the package's __init__ alone
            if (module == prefix or below) and len(prefix) > len(best):
                best, level = prefix, number
    return level


def test_every_module_has_a_floor():
    assert [m for m in modules() if floor(m) is None] == []


def test_no_import_runs_up_a_floor():
    up = [f"{a} (floor {floor(a)}) -> {b} (floor {floor(b)})"
          for a, targets in imports().items() for b in sorted(targets) if floor(b) > floor(a)]
    assert up == []


def test_no_two_modules_import_each_other_even_through_others():
    arrows = imports()

    def reaches(start: str) -> set[str]:
        seen, stack = set(), [start]
        while stack:
            for nxt in arrows.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    circles = sorted(f"{a} -> {b}" for a, targets in arrows.items() for b in targets
                     if a in reaches(b) and not b.startswith(a + "."))  # a package's __init__ may hold its parts
    assert circles == []


def test_the_runtimes_import_only_their_own():
    leaks = [f"{a} -> {b}" for a, targets in imports().items() for runtime, allowed in RUNTIMES.items()
             if a == runtime or a.startswith(runtime + ".")
             for b in targets if not any(b == x or b.startswith(x + ".") for x in allowed)]
    assert leaks == []


def test_the_reading_of_imports_sees_lazy_and_relative_ones():
    arrows = imports()
    assert "perfcourse.grading.cluster" in arrows["perfcourse.grading.run"]  # inside grade_class
    assert "perfcourse.nbgrader_bridge" in arrows["perfcourse.course"]      # inside lessons()
    assert "perfcourse.checks.remote" in arrows["perfcourse.checks.timing"]  # `from . import remote`
