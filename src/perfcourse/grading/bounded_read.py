"""A submitted notebook, bounded before it is parsed and parsed in a bounded process.

A notebook's JSON is the student's, metadata and saved outputs included: 18 MB of `{}` parsed by
nbformat in the grader took 3.1 GB and 13 s. So neither `perfcourse grade`'s survey nor nbgrader's
own autograde (through bounded_export.py) parses one before `check_notebook(path)`, which first
refuses a file larger than MAX_FILE_BYTES (a stat, nothing read), then hands the path to a child
process of its own (one per grading process, started on first use, limited in address space and
time, replaced when it dies or runs past its time), which

- reads the file without following a link and counts what it parses as it parses it: more than
  MAX_OBJECTS objects or MAX_ARRAYS arrays, or nesting deeper than the JSON parser goes, stops the
  parse there (so what nbgrader later parses in a grading worker is bounded as well);
- refuses metadata (the notebook's and its cells' together) over MAX_METADATA_CHARS;
- validates the notebook as nbformat does and applies `scratch.check_cells`.

The child speaks one JSON line each way: a path in; `{"ok": true}`, `{"refused": why}` (the
submission is too big or too deep) or `{"invalid": why}` (not a notebook) out.
`python -m perfcourse.grading.bounded_read` is that child.
"""
from __future__ import annotations

import json
import os
import resource
import stat
import sys
from pathlib import Path

from ..course import CourseError
from .bounded_scan import Child, _Stopped
from .scratch import SubmissionRefused

MAX_FILE_BYTES = 16 << 20      # the notebook file, outputs and metadata included
MAX_OBJECTS = 100_000          # JSON objects in it (a lesson's notebook with outputs holds a few thousand)
MAX_ARRAYS = 200_000           # JSON arrays in it (counted on the raw text: brackets inside strings too)
MAX_METADATA_CHARS = 256 << 10  # the notebook's and every cell's metadata, as JSON, together
READ_MEMORY_BYTES = 768 << 20  # the child's address space
READ_SECONDS = 20.0            # one notebook's check, as the grader waits for it
REPLY_BYTES = 1 << 16


class _TooMuch(Exception):
    pass


_reader = Child(__name__, REPLY_BYTES)


def check_notebook(path: Path) -> None:
    """Raise SubmissionRefused if the notebook at `path` is larger or deeper than the grader reads,
    CourseError if it is no valid notebook; its parsing is the bounded child's."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise CourseError(f"{path}: cannot read notebook ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionRefused("the notebook is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise SubmissionRefused(f"the notebook file holds {info.st_size:,} bytes; the grader reads notebooks of "
                                f"at most {MAX_FILE_BYTES:,} bytes, outputs included "
                                "(clear its outputs and submit again)")
    reply = _ask(str(path))
    if "refused" in reply:
        raise SubmissionRefused(str(reply["refused"])[:500])
    if "invalid" in reply:
        raise CourseError(str(reply["invalid"])[:500])


def _ask(path: str) -> dict:
    with _reader.lock:
        try:
            answer = json.loads(_reader.ask((json.dumps(path) + "\n").encode("utf-8", "surrogateescape"),
                                            READ_SECONDS))
            if not isinstance(answer, dict):
                raise ValueError("not a reply")
            return answer
        except _Stopped:
            _reader.stop()
            return {"refused": f"the notebook could not be read within {READ_SECONDS:g} s"}
        except (OSError, EOFError, ValueError):  # died: out of memory, most likely
            _reader.stop()
            return {"refused": f"the notebook could not be read within {READ_MEMORY_BYTES >> 20} MiB of memory"}


# --- the child ---------------------------------------------------------------------------------
def verdict(path: str) -> dict:
    """What the child answers for one notebook (also callable in-process, for tests)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return {"invalid": f"{path}: cannot read notebook ({exc.strerror})"}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return {"refused": "the notebook is not a regular file"}
        raw = os.read(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        return {"refused": f"the notebook file holds more than {MAX_FILE_BYTES:,} bytes"}
    if raw.count(b"[") > MAX_ARRAYS:
        return {"refused": f"the notebook holds more than {MAX_ARRAYS:,} JSON arrays"}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return {"invalid": f"{path}: cannot read notebook ({exc})"}
    del raw
    objects = [0]

    def counted(pairs):
        objects[0] += 1
        if objects[0] > MAX_OBJECTS:
            raise _TooMuch()
        return dict(pairs)

    try:
        data = json.loads(text, object_pairs_hook=counted)
    except _TooMuch:
        return {"refused": f"the notebook holds more than {MAX_OBJECTS:,} JSON objects (metadata and outputs "
                           "included; clear its outputs and submit again)"}
    except RecursionError:
        return {"refused": "the notebook's JSON is nested deeper than the grader reads"}
    except ValueError:
        data = None  # not JSON: nbformat's reading below names the fault as it always has
    if isinstance(data, dict):
        cells = data.get("cells") if isinstance(data.get("cells"), list) else []
        size = len(json.dumps(data.get("metadata", {}))) + sum(
            len(json.dumps(cell.get("metadata", {}))) for cell in cells if isinstance(cell, dict))
        if size > MAX_METADATA_CHARS:
            return {"refused": f"the notebook's metadata holds {size:,} characters; the grader reads at most "
                               f"{MAX_METADATA_CHARS:,}"}
    del data
    from ..course import read_notebook
    from .scratch import check_cells

    try:
        check_cells(read_notebook(Path(path)))
    except SubmissionRefused as exc:
        return {"refused": str(exc)}
    except CourseError as exc:
        return {"invalid": str(exc)}
    except RecursionError:
        return {"refused": "the notebook's JSON is nested deeper than the grader reads"}
    return {"ok": True}


def _serve() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (READ_MEMORY_BYTES, READ_MEMORY_BYTES))
    from .. import startup  # noqa: F401 (before nbformat: jsonschema's slow import)
    import nbformat  # noqa: F401 (imported once, before the first request)

    for line in sys.stdin.buffer:
        path = json.loads(line)
        sys.stdout.write(json.dumps(verdict(str(path))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
