"""The trace files probes hand back: finding the file `jax.profiler` wrote and sending its bytes.

Shared by the probes of performance-06 (`profiling`) and performance-10 (`diagnosis`). A file is
never parsed in the student's process: its bytes go back as they are, and the trusted side parses
them (perfcourse.checks.traces). Not a probe module: it lists no PROBES.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import shutil
import tempfile

MAX_TRACE_BYTES = 3 << 20  # a compressed trace the channel carries back (the lessons' are ~100 KB)
TRACE_FILE = "perfetto_trace.json.gz"
# Where an earlier run's file is planted: a folder whose name sorts after the profiler's dated run folders
# (digits), with the oldest time, so that only the newest file by time is the capture's own, not the last by name.
OLDER_RUN = ("plugins", "profile", "earlier_run")
OLDER_MTIME = 946684800  # that file's time: 1 January 2000


def error_text(exc: BaseException) -> str:
    """An exception as a probe reports it: its type and message, cut to 500 characters."""
    return f"{type(exc).__name__}: {exc}"[:500]


def file_bytes(path) -> dict:
    """{"file": the file's bytes as they are}, or why they are not sent ("too_big", "unreadable")."""
    try:
        size = os.path.getsize(path)
        if size > MAX_TRACE_BYTES:
            return {"too_big": size}
        with open(path, "rb") as handle:
            return {"file": handle.read(MAX_TRACE_BYTES + 1)}
    except OSError as exc:
        return {"unreadable": error_text(exc)}


def newest(trace_dir) -> str | None:
    """The trace file written last anywhere under `trace_dir`, or None."""
    found = sorted(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True), key=os.path.getmtime)
    return found[-1] if found else None


def newest_bytes(trace_dir) -> dict:
    """The newest trace file's bytes (`file_bytes`), or {"no_trace": True} when none was written."""
    path = newest(trace_dir)
    return file_bytes(path) if path else {"no_trace": True}


def with_older_run(trace_dir: str) -> dict:
    """Plant an earlier run's (empty) trace file under `trace_dir`, as after an earlier capture, so a
    function that names any file it finds there can be told from one that names its own. The
    report begun: the folder and that file, as real paths."""
    older = os.path.join(trace_dir, *OLDER_RUN, TRACE_FILE)
    os.makedirs(os.path.dirname(older), exist_ok=True)
    with gzip.open(older, "wt", encoding="utf-8") as handle:
        json.dump({"displayTimeUnit": "ns", "traceEvents": []}, handle)
    os.utime(older, (OLDER_MTIME, OLDER_MTIME))
    return {"trace_dir": os.path.realpath(trace_dir), "older": os.path.realpath(older)}


def returned_pair(report: dict, function, *args):
    """Call the student's `function`, which returns a pair (a result and the trace file's path): the
    pair, or None with what went wrong in `report` ("raised", or "returned": what came back instead)."""
    try:
        returned = function(*args)
    except Exception as exc:
        report["raised"] = error_text(exc)
        return None
    if not isinstance(returned, tuple) or len(returned) != 2:
        report["returned"] = type(returned).__name__
        return None
    return returned


def add_returned_file(report: dict, path, trace_dir: str) -> dict:
    """What the trusted side needs to judge the path a student's function returned: the path, where
    it really leads, whether it is a file, the newest trace file under `trace_dir`, and the bytes of
    the file named."""
    report["path"] = str(path) if isinstance(path, (str, os.PathLike)) else None
    if report["path"] is None:
        return report
    report["real_path"] = os.path.realpath(report["path"])
    report["exists"] = os.path.isfile(report["path"])
    last = newest(trace_dir)
    report["newest"] = [os.path.realpath(last)] if last else []
    if report["exists"]:
        report.update(file_bytes(report["path"]))
    return report


def in_scratch(probe, trace_dir, *args):
    """Run `probe` with `trace_dir`, or with a folder of its own that is removed afterwards."""
    if trace_dir is not None:
        return probe(*args, trace_dir=trace_dir)
    folder = tempfile.mkdtemp(prefix="trace-")
    try:
        return probe(*args, trace_dir=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
