"""Probes of the performance-audit project: what only the student's process can do.

Each probe runs the student's functions for inputs the trusted side picked
(`perfcourse.checks.audit`) and returns plain data: counter readings, a timer's output, a
JAXPR's text and primitive names, the text of files read back from disk. A failure of the
student's code comes back as data too ({"error": {"during", "type", "message"}}), so the trusted
side can say which step failed. Nothing here decides anything: see `checks.audit` for what is
judged, and what a forger would have to produce.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

PROBES = ("count_traces", "measure_timing", "capture_jaxpr", "write_evidence")
CLEAR = "clear"


def _failure(during, exc: BaseException) -> dict:
    try:
        message = str(exc)[:2000]
    except Exception:
        message = ""
    return {"error": {"during": during, "type": type(exc).__name__, "message": message}}


def count_traces(workload, trace_count, inputs, steps):
    """Clear JAX's caches, then run `steps` (an index into `inputs`: call workload on that pair;
    "clear": jax.clear_caches()), reading trace_count() first and after every step."""
    import jax
    import jax.numpy as jnp

    jax.clear_caches()
    readings = []
    try:
        readings.append(trace_count())
    except Exception as exc:
        return {"readings": readings, **_failure("trace_count", exc)}
    for number, step in enumerate(steps):
        if step == CLEAR:
            jax.clear_caches()
        else:
            a, b = inputs[step]
            try:
                jax.block_until_ready(workload(jnp.asarray(a), jnp.asarray(b)))
            except Exception as exc:
                return {"readings": readings, **_failure(number, exc)}
        try:
            readings.append(trace_count())
        except Exception as exc:
            return {"readings": readings, **_failure("trace_count", exc)}
    return {"readings": readings, "error": None}


def measure_timing(workload, timer, size: int, keyword: str, calls: int):
    """timer(workload, I, I, keyword=calls) on a size x size identity, right after jax.clear_caches()."""
    import jax
    import jax.numpy as jnp

    eye = jax.block_until_ready(jnp.eye(size, dtype=jnp.float32))
    jax.clear_caches()  # forget compiled programs: the first call traces and compiles again
    try:
        return {"value": timer(workload, eye, eye, **{keyword: calls}), "error": None}
    except Exception as exc:
        return _failure("timer", exc)


def _primitives(jaxpr) -> set:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    names |= _primitives(inner)
    return names


def capture_jaxpr(workload, size: int):
    """jax.make_jaxpr(workload)(I, I): its plain text and the primitives it (and its sub-jaxprs) use."""
    import jax
    import jax.numpy as jnp

    eye = jnp.eye(size, dtype=jnp.float32)
    try:
        closed = jax.make_jaxpr(workload)(eye, eye)
        try:
            text = closed.pretty_print(use_color=False)
        except TypeError:  # a JAX whose pretty_print takes no use_color: drop the terminal colours
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(closed))
        return {"text": text, "primitives": sorted(_primitives(closed.jaxpr)), "error": None}
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
