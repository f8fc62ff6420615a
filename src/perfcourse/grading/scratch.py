"""A student's submitted folder: checked, and copied, without following anything the student made.

A submission is the student's: any name in it may be a symbolic link to the gradebook, a named
pipe that hangs whoever opens it, a device, or a file swapped for a link between a check and a
copy. So nothing here follows a link or trusts a name twice:
- `check_submission(folder)` walks the folder through directory descriptors (lstat-like stats,
  never following) and raises `SubmissionRefused` at the first entry that is not a regular file
  or a directory, or when the folder is too big; the message names the entry relative to the
  folder and its kind, and quotes nothing of a link's target or of any file's content;
- `copy_submission(folder, into)` copies the regular files, each opened with O_NOFOLLOW and
  checked again through fstat (so a file swapped for a link or a pipe after the check is
  refused, never followed), into a fresh folder renamed to `into` only when every file copied:
  a refused copy leaves nothing half-written;
- `open_submission(folder)` is the same walk for the sandbox launcher, which hands the opened
  files to bubblewrap;
- `check_cells(nb)` refuses a notebook whose cells are larger than the grader reads.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from ..course import CourseError

MAX_ENTRIES = 200          # files and folders in one submission
MAX_BYTES = 64 << 20       # total size of its files
MAX_DEPTH = 16             # folders inside folders
# A notebook's cells, read before any kernel starts: the lessons' largest cell holds 18k characters
# and a whole lesson 70k; the code scan, nbgrader's feedback and the report read every cell, and a
# cell of megabytes costs each of them gigabytes.
MAX_CELL_CHARS = 64 << 10
MAX_NOTEBOOK_CHARS = 512 << 10

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a named pipe swapped in after the check must not hang the grader.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class SubmissionRefused(CourseError):
    """A submission that holds something other than regular files and folders, or too much."""


def kind(mode: int) -> str:
    """What an entry is, in words, from its (never followed) st_mode."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a special file"


def shown(relative: str) -> str:
    """A student-made name, safe to print on one line: control characters escaped, length capped."""
    text = relative if relative.isprintable() else ascii(relative)[1:-1]
    return text if len(text) <= 120 else text[:117] + "..."


def check_submission(folder: Path) -> None:
    """Raise SubmissionRefused unless `folder` holds only regular files and folders, within bounds."""
    for _kind, _relative, fd in _walk(Path(folder), open_files=False):
        if fd is not None:
            os.close(fd)


def check_cells(nb) -> None:
    """Raise SubmissionRefused if a cell's source and attachments, or all of them together, is larger than the
    grader reads (MAX_CELL_CHARS, MAX_NOTEBOOK_CHARS); the message names the cell."""
    import json

    total = 0
    for number, cell in enumerate(nb.cells, 1):
        # A markdown cell's attachments (images, base64) are drawn into the feedback as its source is.
        size = len(cell.get("source", "")) + (len(json.dumps(cell["attachments"])) if cell.get("attachments") else 0)
        total += size
        if size > MAX_CELL_CHARS:
            raise SubmissionRefused(f"cell {number} holds {size:,} characters of source and attachments; the "
                                    f"grader reads cells of at most {MAX_CELL_CHARS:,}")
    if total > MAX_NOTEBOOK_CHARS:
        raise SubmissionRefused(f"its cells hold {total:,} characters of source and attachments together; "
                                f"the grader reads notebooks of at most {MAX_NOTEBOOK_CHARS:,}")


def digest(folder: Path, checks: Path) -> str:
    """A SHA-256 of a checked submission (folders, file names, contents; links never followed) and
    of the instructor's notebook that holds its checks.

    Grading stores it in the graded notebook; while neither changes, the notebook is up to date
    and is not graded again unless asked (a resubmission or a changed source notebook changes it).
    """
    import hashlib

    summary = hashlib.sha256(b"checks\0" + Path(checks).read_bytes() + b"\0")
    folders, files = open_submission(folder)
    try:
        for relative in folders:
            summary.update(b"d\0" + os.fsencode(relative) + b"\0")
        for relative, fd in sorted(files):
            summary.update(b"f\0" + os.fsencode(relative) + b"\0")
            while chunk := os.read(fd, 1 << 20):
                summary.update(chunk)
            summary.update(b"\0")
    finally:
        for _relative, fd in files:
            os.close(fd)
    return summary.hexdigest()


def open_submission(folder: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """The folders (parents first) and the opened regular files of a checked submission.

    Each file descriptor is a regular file opened without following links; the caller closes them.
    """
    folders, files = [], []
    try:
        for entry_kind, relative, fd in _walk(Path(folder), open_files=True):
            if entry_kind == "dir":
                folders.append(relative)
            else:
                files.append((relative, fd))
    except BaseException:
        for _relative, fd in files:
            os.close(fd)
        raise
    return folders, files


def copy_submission(folder: Path, into: Path) -> list[str]:
    """Copy the regular files of `folder` into `into` (absent or empty); return their relative paths.

    The copy is made in a fresh sibling folder and renamed to `into` at the end, so a refused or
    failed copy leaves `into` as it was. Files get mode 0644 and folders 0755, whatever the student set.
    """
    into = Path(into)
    if into.is_symlink() or (into.exists() and (not into.is_dir() or any(into.iterdir()))):
        raise CourseError(f"{into}: the copy of a submission must go to an absent or empty folder")
    staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=into.parent))
    copied = []
    try:
        staging_fd = os.open(staging, _DIR_FLAGS)
        try:
            total = 0
            for entry_kind, relative, fd in _walk(Path(folder), open_files=True):
                if entry_kind == "dir":
                    os.mkdir(relative, 0o755, dir_fd=staging_fd)
                    continue
                try:
                    total = _copy_file(fd, relative, staging_fd, total)
                finally:
                    os.close(fd)
                copied.append(relative)
        finally:
            os.close(staging_fd)
        staging.chmod(0o755)
        os.rename(staging, into)  # onto an absent or empty folder only
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return copied


def _copy_file(source_fd: int, relative: str, staging_fd: int, total: int) -> int:
    target = os.open(relative, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=staging_fd)
    try:
        while chunk := os.read(source_fd, 1 << 20):
            total += len(chunk)
            if total > MAX_BYTES:  # counted as read, not trusted from a stat
                raise SubmissionRefused(f"holds more than {MAX_BYTES >> 20} MiB of files")
            os.write(target, chunk)
    finally:
        os.close(target)
    return total


def _walk(folder: Path, open_files: bool):
    """Yield ("dir", relative, None) and ("file", relative, fd or None), parents before contents.

    Every step goes through a descriptor of the folder above it: a name the student made is
    looked up once, without following, and what was opened is checked to be what was stat'ed.
    """
    try:
        top = os.lstat(folder)
    except OSError as exc:
        raise SubmissionRefused(f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISDIR(top.st_mode):
        raise SubmissionRefused(f"the submission folder itself is {kind(top.st_mode)}")
    fd = _open_dir(str(folder), None, top, "the submission folder")
    counts = {"entries": 0, "bytes": 0}
    try:
        yield from _walk_dir(fd, "", 1, open_files, counts)
    finally:
        os.close(fd)


def _walk_dir(dir_fd: int, prefix: str, depth: int, open_files: bool, counts: dict):
    if depth > MAX_DEPTH:
        raise SubmissionRefused(f"{shown(prefix.rstrip('/'))}: folders nested deeper than {MAX_DEPTH}")
    with os.scandir(dir_fd) as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        relative = prefix + name
        counts["entries"] += 1
        if counts["entries"] > MAX_ENTRIES:
            raise SubmissionRefused(f"holds more than {MAX_ENTRIES} files and folders")
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise SubmissionRefused(f"{shown(relative)} cannot be read ({exc.strerror})") from None
        if stat.S_ISDIR(info.st_mode):
            yield "dir", relative, None
            child = _open_dir(name, dir_fd, info, shown(relative))
            try:
                yield from _walk_dir(child, relative + "/", depth + 1, open_files, counts)
            finally:
                os.close(child)
            continue
        _require_regular(info, relative)
        counts["bytes"] += info.st_size
        if counts["bytes"] > MAX_BYTES:
            raise SubmissionRefused(f"holds more than {MAX_BYTES >> 20} MiB of files")
        if not open_files:
            yield "file", relative, None
            continue
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:  # ELOOP: swapped for a link since the stat
            raise SubmissionRefused(f"{shown(relative)} changed while it was read ({exc.strerror})") from None
        try:
            opened = os.fstat(fd)
            _require_regular(opened, relative)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise SubmissionRefused(f"{shown(relative)} changed while it was read")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        yield "file", relative, fd


def _require_regular(info: os.stat_result, relative: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionRefused(f"{shown(relative)} is {kind(info.st_mode)}: a submission may hold "
                                "only regular files and folders")
    if info.st_nlink > 1:  # another name for a file somewhere else: not the student's to hand in
        raise SubmissionRefused(f"{shown(relative)} is a hard link (one of {info.st_nlink} names of the "
                                "same file): a submission may hold only regular files and folders")


def _open_dir(name: str, dir_fd: int | None, expected: os.stat_result, label: str) -> int:
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise SubmissionRefused(f"{label} changed while it was read ({exc.strerror})") from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (expected.st_dev, expected.st_ino):
        os.close(fd)
        raise SubmissionRefused(f"{label} changed while it was read")
    return fd


def read_submission(folder: Path) -> tuple[list[str], dict[str, bytes]]:
    """A checked submission as data: its folders (parents first) and each regular file's bytes.

    The same walk as `copy_submission` (nothing followed, bounds counted as read), for grading
    elsewhere: `perfcourse grade --cluster` sends these to a worker, which lays them out again.
    """
    folders, files = open_submission(folder)
    contents, total = {}, 0
    try:
        for relative, fd in files:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                total += len(chunk)
                if total > MAX_BYTES:
                    raise SubmissionRefused(f"holds more than {MAX_BYTES >> 20} MiB of files")
                chunks.append(chunk)
            contents[relative] = b"".join(chunks)
    finally:
        for _relative, fd in files:
            os.close(fd)
    return folders, contents
