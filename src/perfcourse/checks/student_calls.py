"""How a check calls the student's code and reads the numbers it returns: one rule for each.

`call_student(what, fn, *args, **kwargs)` calls a student's function (or a course probe that runs
one in the student's kernel) and returns what it returns. A `CheckFailed` (an `AuditFailure`, an
`UntrustedResult`) passes through unchanged: it is a check's verdict, already worded for the
student; so does an `InstrumentMissing`, a fault of the course on this JAX. Anything else it
raises becomes one `CheckFailed`: "{what} raised {type}: {message}", the message on one line and
cut at MESSAGE_CHARS (`said`), then `advice` where the caller gives it (keyword only, never passed
to `fn`). Feedback shows that sentence, never a traceback of the hidden test.

`number(value)` is a plain float from what a student returned: an int or a float, a NumPy integer
or floating scalar, or a 0-d array of one. A bool is refused (True is no count), and so are NaN and
the infinities unless the caller passes `finite=False` (a compiler's estimate may be infinite).
Refused, it is None, or, where the caller names `what`, a CheckFailed saying so. `numbers(values)`
is the same rule for a list, a tuple or a 1-d array, refused whole when one item is; `counts(values)`
takes such a list of whole numbers only (ints and NumPy integers, never a float however whole).

Only types are looked at: a stand-in for an object of the student's kernel (`remote.Remote`) is
refused without a request crossing to that kernel.
"""

from __future__ import annotations

import math
import numbers as _abc
import sys

import numpy as np

from . import CheckFailed, InstrumentMissing, remote

MESSAGE_CHARS = 300  # of a student's exception message, on one line, in the feedback


def one_line(message) -> str:
    """A message on one line, cut at MESSAGE_CHARS."""
    text = " ".join(line.strip() for line in str(message).splitlines() if line.strip())
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 3] + "..."


def said_as(kind: str, message) -> str:
    """An error as feedback shows it: its type's name, then its message on one line."""
    text = one_line(message)
    return f"{kind[:100]}: {text}" if text else kind[:100]


def said(exc: BaseException) -> str:
    """An exception as feedback shows it (`said_as` of its type and message)."""
    try:
        message = str(exc)
    except Exception:  # an exception class of the student's whose __str__ fails: its type says enough
        message = ""
    return said_as(type(exc).__name__, message)


def raised(what: str, error: str, advice: str = "") -> str:
    """The feedback's sentence for `what` raising `error` (`said` or `said_as`), then the advice."""
    return f"{what} raised {error}" + (f"; {advice}" if advice else "")


def call_student(what: str, fn, /, *args, advice: str = "", **kwargs):
    """fn(*args, **kwargs); whatever it raises but a CheckFailed becomes one CheckFailed naming `what`."""
    try:
        return fn(*args, **kwargs)
    except (CheckFailed, InstrumentMissing):
        raise
    except Exception as exc:  # the student's bug, reported rather than a traceback
        raise CheckFailed(raised(what, said(exc), advice)) from None


def _refused(value, what: str | None, finite: bool):
    if what is None:
        return None
    kind = "a finite number" if finite else "a number"
    raise CheckFailed(f"{what} should be {kind}, got {_shown_type(value)}")


def _shown_type(value) -> str:
    if type(value) is float:  # NaN or an infinity
        return repr(value)
    return "an object of your kernel" if type(value) is remote.Remote else type(value).__name__


def _array_type(kind: type) -> bool:
    if issubclass(kind, np.ndarray):
        return True
    jax = sys.modules.get("jax")  # a check that holds a JAX array has imported JAX already
    return jax is not None and issubclass(kind, jax.Array)


def number(value, what: str | None = None, *, finite: bool = True) -> float | None:
    """`value` as a float by the module's rule; refused: None, or CheckFailed naming `what` when given."""
    given, kind = value, type(value)
    if kind is not float and kind is not int and _array_type(kind):  # plain numbers first: a trace has many
        try:  # a 0-d array of integers or floats; a tracer has no value to read
            value = np.asarray(value)[()] if value.ndim == 0 and np.dtype(value.dtype).kind in "iuf" else None
        except Exception:
            value = None
        kind = type(value)
    if issubclass(kind, (bool, np.bool_)) or not issubclass(kind, (_abc.Real, np.integer, np.floating)):
        return _refused(given, what, finite)
    try:
        out = float(value)
    except (OverflowError, TypeError, ValueError):  # an int beyond a float's range
        return _refused(given, what, finite)
    if finite and not math.isfinite(out):
        return _refused(out, what, finite)
    return out


def _items(values) -> list | None:
    """A list, a tuple or a 1-d array as the list of its items; None for anything else (a tracer too)."""
    kind = type(values)
    if _array_type(kind):
        try:
            return list(np.asarray(values)) if values.ndim == 1 else None
        except Exception:  # a tracer
            return None
    return list(values) if issubclass(kind, (list, tuple)) else None


def numbers(values, what: str | None = None, *, finite: bool = True) -> list[float] | None:
    """A list, tuple or 1-d array of numbers, each by `number`'s rule; refused as a whole when one is."""
    items = _items(values)
    if items is None:
        return _refused(values, what, finite)
    out = [number(v, finite=finite) for v in items]
    if any(v is None for v in out):
        if what is None:
            return None
        raise CheckFailed(f"{what} should be a list of {'finite ' if finite else ''}numbers")
    return out


def counts(values, what: str | None = None) -> list[int] | None:
    """A list, tuple or 1-d array of whole numbers (ints, NumPy integers) as ints: never a bool, nor a
    float however whole; refused as a whole: None, or CheckFailed naming `what` when given."""
    items = _items(values)
    if items is None or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        if what is None:
            return None
        raise CheckFailed(f"{what} should be a list of whole numbers")
    return [int(v) for v in items]
