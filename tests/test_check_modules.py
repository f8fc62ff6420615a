"""The check modules share helpers by their public names only: a name with a leading underscore is
its module's own, so no check module imports another's (`from .x import _y`) or reaches into it
(`x._y`). A helper two modules need is public in the module it belongs to (issue 53)."""
import ast

from conftest import ROOT

CHECKS = ROOT / "src" / "perfcourse" / "checks"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def borrowed_private_names(path) -> list[str]:
    """`module: other._name` for each private name of another check module that `path` uses."""
    siblings = {p.stem for p in CHECKS.glob("*.py")} - {"__init__"}
    tree = ast.parse(path.read_text())
    modules: dict[str, str] = {}  # a local name bound to a sibling check module -> that module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level == 0 and target.startswith("perfcourse.checks"):
                target = target[len("perfcourse.checks"):].lstrip(".")
            elif node.level != 1:
                continue
            for alias in node.names:
                if not target and alias.name in siblings:
                    modules[alias.asname or alias.name] = alias.name
                elif target in siblings and target != path.stem and _private(alias.name):
                    found.append(f"{path.stem}: from .{target} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("perfcourse.checks.") and alias.asname:
                    modules[alias.asname] = alias.name.rpartition(".")[2]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
            owner = modules.get(node.value.id)
            if owner and owner != path.stem:
                found.append(f"{path.stem}: {owner}.{node.attr}")
    return found


def test_no_check_module_uses_another_modules_private_names():
    found = [use for path in sorted(CHECKS.glob("*.py")) for use in borrowed_private_names(path)]
    assert not found, sorted(found)


def test_the_scan_sees_both_ways_of_borrowing(tmp_path):
    probe = CHECKS / "diagnosis.py"  # a real sibling's name, so the scan takes the module for a check module
    source = ("from . import sharding\nfrom .profiling import _plan\nsharding._blocks(1)\nsharding.mesh(2)\n"
              "from perfcourse.checks.memory import _plain\nimport perfcourse.checks.remat as remat\nremat._held(3)\n")
    fake = tmp_path / probe.name
    fake.write_text(source)
    assert borrowed_private_names(fake) == ["diagnosis: from .profiling import _plan",
                                            "diagnosis: from .memory import _plain",
                                            "diagnosis: sharding._blocks", "diagnosis: remat._held"]
