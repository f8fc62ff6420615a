"""Course code that runs in the student's process and reports plain data to the trusted side.

A probe is `perfcourse.kernel.probes.<module>.<function>`, listed in that module's `PROBES`.
It builds what only the student's process can build (real jitted functions and arrays, a jaxpr,
compiled estimates, measurements against an instrument) for inputs the trusted side chose, and
returns values: numbers, strings, arrays, lists and dicts. Student code can replace a probe like
anything else in its interpreter, so the trusted side judges what comes back and never takes a
probe's word for a verdict (each checks module says what a forger would have to produce).

`run` is also called in-process by `perfcourse.checks.remote.probe` when no channel is
installed (unit tests, the project's command-line checker).
"""
from __future__ import annotations

import ast
import importlib
import os
import sys
import types

from .. import library

# Bound at import (the kernel imports this package at start-up): a replaced importlib.import_module
# would otherwise hand the dispatcher a module of the student's making, and its probe the trusted
# side's stand-ins (a timer's schedule among them).
_import_module = importlib.import_module
_here, _function, _report = os.path.dirname(os.path.abspath(__file__)), types.FunctionType, library.report
_parse, _open, _defined = ast.parse, open, {}


def _top_level(path: str) -> list:
    with _open(path, encoding="utf-8") as handle:
        return _parse(handle.read()).body


def _replaced(module, path: str, probe: str) -> list[str]:
    """The probe and the functions and classes `path` defines at its top level that its module no
    longer holds as defined there, and the names it imports from a sibling probe module (`from .programs
    import as_jitted`) that no longer hold a function of this folder: a probe calls its module's helpers
    by name, so a helper replaced on the module (reached from a function a probe lends,
    `inspect.getmodule(fn)`) answers for it."""
    if path not in _defined:
        try:
            body = _top_level(path)
            _defined[path] = [(node.name, path) for node in body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
            for node in body:  # a sibling's functions and classes imported by name (its constants are not code)
                if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                    sibling = {n.name for n in _top_level(os.path.join(_here, f"{node.module}.py"))
                               if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                    _defined[path] += [(a.asname or a.name, None) for a in node.names if a.name in sibling]
        except (OSError, SyntaxError, ValueError):  # a file not there to read: the probe itself, as before
            _defined[path] = []
    homes = dict(_defined[path])
    names = []
    for name in dict.fromkeys([probe, *homes]):
        home = homes.get(name, path)
        try:
            value = vars(module).get(name)
            while type(value) is not _function and not isinstance(value, type) and hasattr(value, "__wrapped__"):
                value = value.__wrapped__  # functools.lru_cache
            own = [f for f in vars(value).values() if type(f) is _function] if isinstance(value, type) else [value]
            kept = all(type(f) is _function and (f.__code__.co_filename == home if home else
                                                  os.path.dirname(f.__code__.co_filename) == _here) for f in own)
        except Exception:  # noqa: BLE001 (an object of the student's that cannot be read was put there)
            kept = False
        if not kept:
            names.append(f"{module.__name__}.{name}")
    return names


def run(name: str, *args, **kwargs):
    module_name, _, function = str(name).partition(".")
    if not module_name.isidentifier() or not function.isidentifier():
        raise ValueError(f"no probe named {str(name)[:60]!r}")
    module = _import_module(f"{__name__}.{module_name}")
    if function not in getattr(module, "PROBES", ()):
        raise ValueError(f"no probe named {name!r}")
    # A probe or a helper it calls that is not the function the course's file defines: replaced in
    # this kernel (however the module was reached: a computed import, an importer of its own, a
    # pickle, a lent function's module). Evidence, as kernel/library.py's.
    _report(_replaced(module, os.path.join(_here, f"{module_name}.py"), function))
    return getattr(module, function)(*args, **kwargs)


# The dispatcher itself, replaced later on this package, is named after the next probe (kernel/agent.py).
library.keep(__name__, sys.modules[__name__], ("run", "_import_module"))
