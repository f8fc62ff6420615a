"""What a grade cell's error says about the student's mistake, and what of it a student may read.

Grade cells run in the trusted kernel. An exception the notebook's code raised (its function was
called through the channel, checks/remote.py) arrives there as the same builtin type, or as the
channel's PeerException with the text "Type: message"; either way its traceback ends in the
channel's frames. `record` rewrites such an error in the graded notebook as the student's own:
its type and message, the grade cell's line that called the student's code, and one line in place
of the channel's frames (MARKER). Nothing else of the output changes.

`shown` says what feedback and the class report show of a grade cell's first error:
- "verdict": a check's verdict written for students (checks.STUDENT_FACING): its message;
- "message": an error the notebook's code raised, or one raised by a public line of the cell
  (above the hidden tests, which students read and run themselves): its type and message, or a
  failed public assertion's own message;
- "type": anything else, raised by a hidden test's lines, whose text may quote them: its type only.
Where an error came from is read from the traceback's frames, which the trusted kernel wrote:
the student's text is only ever in an exception's message, never taken for a frame.
"""
from __future__ import annotations

import re

from ..checks import STUDENT_FACING

HIDDEN_MARKER = "BEGIN HIDDEN TESTS"  # nbgrader's begin delimiter of hidden tests
MESSAGE_CHARS = 2000  # a verdict is a few lines; anything longer is cut
PEER = "PeerException"  # channel.endpoint's stand-in for a type this side does not rebuild
# A student's exception of a name the course gives a meaning to (a check's verdict, a grader's
# error) keeps its name in the message, under this one.
NOTEBOOK_ERROR = "NotebookError"
MARKER = "(raised by the notebook's code, in the student's kernel)"
HEADER = "Traceback (most recent call last)"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_FILE = re.compile(r"File (\S+):\d+, in (\S+?)\(")
_CELL = re.compile(r"Cell In\[\d+\], line (\d+)")
# The channel's frames (the stand-in's call, the request that raised what the peer raised).
_CHANNEL_FILES = ("perfcourse/checks/remote.py", "perfcourse/channel/")


def printable(message: str) -> str:
    """A message as feedback shows it: printable lines, at most MESSAGE_CHARS characters."""
    lines = ["".join(ch if ch.isprintable() else "?" for ch in line) for line in str(message).splitlines()]
    text = "\n".join(lines).strip("\n")
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 3] + "..."


def _plain(entry) -> str:
    return _ANSI.sub("", str(entry))


def _channel_frame(entry) -> str | None:
    """The function a traceback entry's frame runs in, where that frame is the channel's."""
    found = _FILE.match(_plain(entry).lstrip())
    if found and any(part in found.group(1) for part in _CHANNEL_FILES):
        return found.group(2)
    return None


def _last_frames(traceback: list) -> list[str]:
    """The frames of the last exception's traceback, outermost first: the entries after its
    header, its own line (the last entry, the student's text) left out."""
    entries = [_plain(entry) for entry in traceback[:-1]]
    starts = [i for i, entry in enumerate(entries) if HEADER in entry]
    return entries[starts[-1] + 1:] if starts else []


def _from_notebook(frames: list[str]) -> bool:
    return bool(frames) and (frames[-1].strip() == MARKER or _channel_frame(frames[-1]) == "Channel.request")


def _student_type(output, reserved: tuple[str, ...]) -> tuple[str, str]:
    """A PeerException's "Type: message" as the student's type and message."""
    ename, evalue = str(output.get("ename", "")), str(output.get("evalue", ""))
    if ename != PEER:
        return ename, evalue
    kind, _, message = evalue.partition(": ")
    if not _NAME.fullmatch(kind):
        return ename, evalue
    if kind in reserved or kind in STUDENT_FACING or kind == PEER:
        return NOTEBOOK_ERROR, evalue
    return kind, message


def record(cell, reserved: tuple[str, ...] = ()) -> None:
    """Rewrite a graded grade cell's error outputs raised by the notebook's code as the student's
    own (see the module's text). `reserved`: names the grader writes errors under (execute.GRADER_ERRORS)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") != "error":
            continue
        traceback = list(output.get("traceback") or [])
        if not _from_notebook(_last_frames(traceback)):
            continue
        ename, evalue = _student_type(output, reserved)
        kept, in_channel = [], False
        for entry in traceback[:-1]:
            where = _channel_frame(entry)
            if where is None:
                kept.append(entry.replace(PEER, ename, 1) if HEADER in _plain(entry) else entry)
                in_channel = False
            elif not in_channel:
                kept.append(MARKER)
                in_channel = True
        output["ename"], output["evalue"] = ename, evalue
        output["traceback"] = kept + [f"{ename}: {evalue}"]


def _public(frames: list[str], source: str, marker: str) -> bool:
    """Did the cell's statement that raised stand above its hidden tests?"""
    cell_lines = [int(found.group(1)) for found in map(_CELL.match, (f.lstrip() for f in frames)) if found]
    if not cell_lines:
        return False
    lines = str(source).splitlines()
    hidden = next((number for number, line in enumerate(lines, 1) if marker in line), len(lines) + 1)
    return cell_lines[0] < hidden


def _failed_line(frames: list[str], source: str) -> str:
    cell_lines = [int(found.group(1)) for found in map(_CELL.match, (f.lstrip() for f in frames)) if found]
    lines = str(source).splitlines()
    return lines[cell_lines[0] - 1].strip() if cell_lines and 0 < cell_lines[0] <= len(lines) else ""


def shown(cell, marker: str = HIDDEN_MARKER) -> tuple[str, str] | None:
    """(kind, text) of what a student may read of the cell's first error (None: it has none).
    kind is "verdict", "message" or "type" (see the module's text)."""
    errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    if not errors:
        return None
    error = errors[0]
    frames = _last_frames(list(error.get("traceback") or []))
    ename, evalue = _student_type(error, ()) if _from_notebook(frames) else \
        (str(error.get("ename") or "error"), str(error.get("evalue") or ""))
    ename = printable(ename)[:100] or "error"
    if ename in STUDENT_FACING:
        return "verdict", printable(evalue)
    if _from_notebook(frames):
        return "message", printable(f"{ename}: {evalue}" if evalue else ename)
    if _public(frames, cell.get("source", ""), marker):
        if ename == "AssertionError":
            message = printable(evalue) or f"this public check failed: {_failed_line(frames, cell.get('source', ''))}"
            return "message", printable(message)
        return "message", printable(f"{ename}: {evalue}" if evalue else ename)
    return "type", ename
