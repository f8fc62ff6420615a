"""What a process can read of the course: every file it reaches that holds a solution or hidden-test
line of source/, and every nbgrader gradebook.

tests/test_browser.py runs this file inside `make student-lab`'s sandbox twice, from a terminal and
from a notebook's kernel (`python3 reach_probe.py ORDERS RESULT`), and in its own process over the
scratch course as the control (`scan`), which must find every lesson's source notebook and the
gradebook. It needs nothing but the standard library: the sandbox mounts nothing of the course.

The orders (a JSON file) carry the lines to look for base64-encoded, so neither they nor the probe
notebook that names them holds a line in plain text. A line is found in a file as it is or as JSON
writes it inside a string (a notebook's source). The walk covers everything the process sees but
/proc, /sys and /dev; in `software` (the host's system folders and the Python environment, mounted
read-only) it reads only the files named as the course's notebooks and gradebook are: the rest
is the host's packages, whose common lines would match by chance (and nbgrader ships a gradebook
of its own tests, which names no lesson of the course).
"""
from __future__ import annotations

import base64
import json
import os
import stat
import sys

SKIPPED = ("/proc", "/sys", "/dev")
SQLITE = b"SQLite format 3\x00"
GRADEBOOK_TABLES = (b"grade_cell", b"submitted_notebook")  # nbgrader's gradebook schema
READ_LIMIT = 64 << 20  # bytes of one file


def encode(lines: list[str]) -> str:
    return base64.b64encode(json.dumps(lines).encode()).decode()


def decode(text: str) -> list[str]:
    return json.loads(base64.b64decode(text))


def _forms(line: str) -> tuple[bytes, bytes]:
    return line.encode(), json.dumps(line)[1:-1].encode()


def _under(path: str, folders: list[str]) -> bool:
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def scan(roots: list[str], lines: list[str], software: list[str] = (), names: list[str] = (),
         marks: list[str] = ()) -> dict:
    """Walk `roots` (symlinks not followed, each folder once); return what was found: files holding
    `lines` ({path: count}), gradebooks, files in `software` whose path ends with one of `names` and
    that are the course's (`marks`: its lesson ids), and how many files were read or refused."""
    forms = [_forms(line) for line in lines]
    marks = [mark.encode() for mark in marks]
    found = {"lines": {}, "gradebooks": [], "named": [], "read": 0, "refused": 0}
    seen: set[tuple[int, int]] = set()
    for root in roots:
        for folder, dirs, files in os.walk(os.path.abspath(os.path.expanduser(root)),
                                           onerror=lambda _: found.__setitem__("refused", found["refused"] + 1)):
            try:
                key = os.stat(folder, follow_symlinks=False)
            except OSError:
                continue
            if (key.st_dev, key.st_ino) in seen or _under(folder, list(SKIPPED)):
                dirs[:] = []
                continue
            seen.add((key.st_dev, key.st_ino))
            for name in files:
                path = os.path.join(folder, name)
                if not _under(path, list(software)):
                    _read_one(path, forms, found)
                elif any(path.endswith("/" + suffix) for suffix in names):
                    _named_one(path, forms, marks, found)
    return found


def _named_one(path: str, forms: list[tuple[bytes, bytes]], marks: list[bytes], found: dict) -> None:
    """A file of the host's software named as a file of the course: the course's if it holds a
    line looked for, or is a gradebook that names a lesson (packages ship gradebooks of their own)."""
    own = {"lines": {}, "gradebooks": [], "named": [], "read": 0, "refused": 0}
    _read_one(path, forms, own)
    if own["lines"] or (own["gradebooks"] and any(mark in _head(path) for mark in marks)):
        found["named"].append(path)


def _head(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(READ_LIMIT)


def _read_one(path: str, forms: list[tuple[bytes, bytes]], found: dict) -> None:
    try:
        if not stat.S_ISREG(os.stat(path, follow_symlinks=False).st_mode):
            return
        with open(path, "rb") as handle:
            data = handle.read(READ_LIMIT)
    except OSError:
        found["refused"] += 1
        return
    found["read"] += 1
    if data.startswith(SQLITE) and all(table in data for table in GRADEBOOK_TABLES):
        found["gradebooks"].append(path)
    count = sum(1 for plain, quoted in forms if plain in data or quoted in data)
    if count:
        found["lines"][path] = count


def main(orders_path: str, result_path: str) -> int:
    with open(orders_path, encoding="utf-8") as handle:
        orders = json.load(handle)
    result = scan(orders["roots"], decode(orders["lines"]), orders["software"], orders["names"], orders["marks"])
    result["uid"] = os.getuid()
    tried = {}
    for path in orders["paths"]:  # the course's files by name, each read or refused with its reason
        try:
            with open(os.path.expanduser(path), "rb") as handle:
                tried[path] = f"read {len(handle.read(4096))} bytes"
        except OSError as exc:
            tried[path] = f"refused: {exc.strerror}"
    result["tried"] = tried
    listed = {}
    for path in orders["listed"]:  # folders of the course, as the process sees them
        try:
            listed[path] = sorted(os.listdir(path))
        except OSError as exc:
            listed[path] = f"refused: {exc.strerror}"
    result["listed"] = listed
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
