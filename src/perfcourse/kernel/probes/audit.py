"""Probes of the performance-audit project: what only the student's process can do.

The trusted side (`perfcourse.checks.audit`) calls the student's workload, counter, evidence
reading and report builder, and the course's timer, itself; these probes do only what must happen
inside the student's process around those calls: clear JAX's caches, call workload under another
default matmul precision (a new trace context), capture a JAXPR's text, write files and read them
back. Each returns plain data; a failure of the student's code comes back as data too
({"error": {"during", "type", "message"}}), so the trusted side can say which step failed. Nothing
here decides anything: see `checks.audit` for what is judged, and what a forger would have to
produce.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

PROBES = ("clear_caches", "call_in_context", "capture_jaxpr", "write_evidence")


def _failure(during, exc: BaseException) -> dict:
    try:
        message = str(exc)[:2000]
    except Exception:
        message = ""
    return {"error": {"during": during, "type": type(exc).__name__, "message": message}}


def clear_caches():
    """jax.clear_caches(): JAX forgets every trace and compiled program of this process."""
    import jax

    try:
        jax.clear_caches()
    except Exception as exc:
        return _failure("clear", exc)
    return {"error": None}


def call_in_context(workload, a, b, candidates):
    """workload(a, b) under jax.default_matmul_precision(p), p the first of `candidates` that is
    not the precision in effect: part of JAX's trace context, so JAX traces workload again."""
    import jax
    import jax.numpy as jnp

    current = getattr(jax.config, "jax_default_matmul_precision", None)
    precision = next((str(p) for p in candidates if str(p) != current), None)
    if precision is None:
        return {"error": {"during": "context", "type": "ValueError", "message": "no other precision to use"}}
    try:
        with jax.default_matmul_precision(precision):
            jax.block_until_ready(workload(jnp.asarray(a), jnp.asarray(b)))
    except Exception as exc:
        return _failure("call", exc)
    return {"precision": precision, "error": None}


def capture_jaxpr(workload, size: int):
    """jax.make_jaxpr(workload)(I, I): its plain text."""
    import jax
    import jax.numpy as jnp

    eye = jnp.eye(size, dtype=jnp.float32)
    try:
        closed = jax.make_jaxpr(workload)(eye, eye)
        try:
            text = closed.pretty_print(use_color=False)
        except TypeError:  # a JAX whose pretty_print takes no use_color: drop the terminal colours
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(closed))
        return {"text": text, "error": None}
    except Exception as exc:
        return _failure("make_jaxpr", exc)


def _write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_evidence(directory, files):
    """Write `files` ({name: text}) into `directory` (None: a temporary one, removed afterwards),
    then read the directory back: its listing and every file's text."""
    names = [name for name in files if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name)]
    if len(names) != len(files):
        return {"error": {"during": "write", "type": "ValueError", "message": "a file name that is not plain"}}
    temporary = tempfile.TemporaryDirectory(prefix="performance-audit-") if directory is None else None
    try:
        path = Path(temporary.name if temporary is not None else directory)
        path.mkdir(parents=True, exist_ok=True)
        for name in names:
            _write(path / name, files[name])
        return {"directory": str(path), "listing": sorted(p.name for p in path.iterdir()),
                "files": {name: (path / name).read_text(encoding="utf-8") for name in names}, "error": None}
    except OSError as exc:
        return {"error": {"during": "write", "type": type(exc).__name__, "message": exc.strerror or str(exc)}}
    finally:
        if temporary is not None:
            temporary.cleanup()
