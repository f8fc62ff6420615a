"""Programs the trusted kernel examines itself: *verified*, not believed.

A check about a program (its stages, flops, remat structure, scan structure, collectives) asks
the student's kernel for the program as data, `jax.export`'s serialized bytes
(`perfcourse.kernel.probes.programs`), and judges it here: deserialized, its StableHLO read,
compiled, costed and run on fresh inputs against a reference. Numbers a probe computed would be a
claim; a program that computes the right results with the right structure is the solution.

Parsing bytes a student's process made is attack surface (MLIR's bytecode reader is C++). So
before parsing, `exported` marks this trusted kernel tainted (`remote.taint`): the grader then
stops it after this notebook instead of keeping it for the next student's. Programs holding
custom calls other than the partitioner's annotations are refused (jax.export already refuses
host callbacks), so nothing of the student's process runs here.
"""
from __future__ import annotations

import re

import numpy as np

from . import CheckFailed, remote
from .student_calls import call_student

MAX_PROGRAM_BYTES = 4 << 20   # a lesson's programs are a few kilobytes
# Custom calls the SPMD partitioner reads as annotations (sharding constraints, shard_map).
ANNOTATIONS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                         "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
                         "xla.sdy.FuncResultSharding"})
_CUSTOM_CALL = re.compile(r'custom_call\s*@\s*"?([\w.\-]+)|call_target_name\s*=\s*"([^"]+)"')


# One operation per line of MLIR's printed form: `%0 = stablehlo.tanh ...`, `%1:4 = stablehlo.while(...`,
# `stablehlo.return ...`, `return ...` (func.return), `func.call @f(...)`; region labels (`cond {`,
# `} do {`) and location aliases (`#loc...`) are not operations.
_OPERATION = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_][\w]*\.[\w.]+|return|call)\b')


def operations(program) -> list[str]:
    """The operations of an exported program (or of its MLIR text), in printed order, by name:
    `stablehlo.while`, `stablehlo.tanh`, `func.call`, `return`... Its functions' bodies included."""
    text = program if isinstance(program, str) else program.mlir_module()
    return [m.group(1) for line in text.splitlines()
            if not line.startswith("#") and (m := _OPERATION.match(line))]


def specs_of(*args) -> list[tuple[list[int], str]]:
    """(shape, dtype) of each argument, the form `exported` sends."""
    return [(list(np.shape(a)), str(np.asarray(a).dtype) if not hasattr(a, "dtype") else str(a.dtype))
            for a in args]


def exported(fn, specs, *, what: str = "the function", drop_debug_callbacks: bool = False):
    """`fn` of the student's kernel as a `jax.export.Exported`, deserialized and checked here.

    `specs` is a list of (shape, dtype) pairs; the exported program must take exactly those.
    CheckFailed, worded for the student, when it cannot be exported or is not such a program.
    `drop_debug_callbacks`: export it without its jax.debug.callback / jax.debug.print calls
    (which jax.export cannot serialize, and which compute nothing its results depend on).
    """
    specs = [(list(int(d) for d in shape), str(np.dtype(dtype))) for shape, dtype in specs]
    options = {"drop_debug_callbacks": True} if drop_debug_callbacks else {}
    data = call_student(f"exporting {what} as one JAX program for the grader to examine", remote.probe,
                        "programs.export", fn, specs, **options,
                        advice="keep it a jittable function of its array arguments, without host callbacks")
    return program_from(data, specs, what=what)


def program_from(data, specs, *, what: str = "the function"):
    """Bytes of `jax.export.Exported.serialize()` that a lesson's own probe sent (a program exported
    with shardings, say), deserialized and checked here as `exported` does."""
    import jax

    specs = [(list(int(d) for d in shape), str(np.dtype(dtype))) for shape, dtype in specs]
    if type(data) is not bytes or not data or len(data) > MAX_PROGRAM_BYTES:
        raise CheckFailed(f"{what} did not come back as a JAX program the grader can examine")
    remote.taint("parsed a program the student's kernel exported")
    try:
        program = jax.export.deserialize(bytearray(data))
        avals = [(list(a.shape), str(a.dtype)) for a in program.in_avals]
        text = program.mlir_module()  # the module's bytes are parsed here: a corrupt one raises now
    except Exception:  # noqa: BLE001 (JaxRuntimeError and whatever else hostile bytes provoke)
        raise CheckFailed(f"{what} did not come back as a JAX program the grader can examine") from None
    if avals != specs:
        raise CheckFailed(f"{what} came back as a program for other arguments than those it was given")
    calls = {a or b for a, b in _CUSTOM_CALL.findall(text)} - ANNOTATIONS
    if calls:
        raise CheckFailed(f"{what} holds calls the grader does not run ({', '.join(sorted(calls))[:80]}): "
                          "compute with JAX operations only")
    return program
