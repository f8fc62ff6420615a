"""What the course's instruments rely on in the student's process, as it was at the kernel's start-up.

A value the trusted side hands an instrument (a timed call's trip count, say) passes through
library code of the student's own process: the channel's classes, `json`, `socket`, and the JAX
functions the instrument calls. Replacing any of those on its module or class (`jax.numpy.int32 =
spy`, `json.loads = spy`, `socket.socket.recv = spy`) would let student code read the value on
its way, without touching the instrument. So the instruments bind what they call when they are
imported, at the kernel's start-up (before any student code: perfcourse.kernel.agent imports
them), and `keep` records here, at that moment, what each owner (a module, a class, an object)
holds; `changed()` names every kept attribute that no longer holds the same object (or, for a
class or an object, an attribute added to it since: an instance attribute shadows its class's).
The agent calls it before and after each probe it runs (student code runs inside a probe: a
timer) and raises CHANGED_EVENT for each name (`report`), which the evidence hook writes and the
grader flags (kernel/evidence.py).

The record is kept in this module, which student code reaches only by naming the course's
package (flagged by the grader's scan of the submission).
"""
from __future__ import annotations

import sys

CHANGED_EVENT = "perfcourse.evidence.changed"  # the audit event an instrument raises, with the name changed

_MISSING = object()
_kept: list = []     # (name, owner, {attribute: object}, whether attributes added count, attributes skipped)
_watched: list = []  # (name, a function that says whether what it looks at is as it should be)


def keep(name: str, owner, attributes=None, *, added: bool = False, skip=()) -> None:
    """Record what `owner` holds now: the named `attributes`, or every attribute of its __dict__.

    `added`: an attribute that appears on it later counts as a change (classes and objects, whose
    new attributes shadow inherited ones; not modules, which gain submodules as they import)."""
    found = vars(owner)
    names = list(found) if attributes is None else list(attributes)
    _kept.append((name, owner, {a: found.get(a, _MISSING) for a in names if a not in skip}, added, frozenset(skip)))


def watch(name: str, sound) -> None:
    """Have `changed()` name `name` whenever `sound()` is false (state that is not a plain attribute)."""
    _watched.append((name, sound))


def changed(_vars=vars, _missing=_MISSING) -> list[str]:
    """Every kept attribute that holds another object now (or was added), as 'owner.attribute'."""
    names = []
    for name, owner, attributes, added, skip in _kept:
        try:
            now = _vars(owner)
            names += [f"{name}.{a}" for a, value in attributes.items() if now.get(a, _missing) is not value]
            if added:
                names += [f"{name}.{a}" for a in now if a not in attributes and a not in skip]
        except Exception:  # noqa: BLE001 (an owner that can no longer be read has changed too)
            names.append(name)
    for name, sound in _watched:
        try:
            if not sound():
                names.append(name)
        except Exception:  # noqa: BLE001
            names.append(name)
    return names


def report(names, _audit=sys.audit, _event=CHANGED_EVENT) -> None:
    """Have the evidence hook write each changed name (kernel/evidence.py)."""
    for name in names:
        _audit(_event, str(name)[:120])
