"""Put the student's Pallas kernel body, or tiling, in a `pallas_call` and export it (`jax.export`).

A kernel body is a function of Pallas refs, and a BlockSpec's index map a function `pallas_call`
traces: only the process that defines them can trace them. The trusted kernel picks the sizes and
the blocks; these probes build the course's tiled product there, in interpret mode (plain JAX
operations, which jax.export can serialize and the trusted kernel can run on any backend), and
return the program's bytes. The output starts as a third argument (aliased to it, read as a whole
in `pl.ANY` memory), so the trusted kernel decides what an output block holds before the body
writes it: NaN, or values that are neither NaN nor zero. What the trusted kernel then checks is
the program's structure against its own export of the course's call, and its results on values it
never sends (`perfcourse.checks.pallas`).
"""
from __future__ import annotations

import os
import sys
import types

from .. import library
from ..evidence import installed_roots

PROBES = ("export_kernel", "export_tiling")
_ROOTS = installed_roots()


def pallas_as_installed() -> bool:
    """Is the pallas these probes import (inside their functions, when they run) JAX's own: the module
    Python imported under its name, its functions defined in the installed environment's files? A copy
    put in its place (`jax.experimental.pallas = mine`) could build a body the student never wrote."""
    experimental = sys.modules.get("jax.experimental")
    attribute = vars(experimental).get("pallas") if experimental is not None else None
    # `from jax.experimental import pallas` takes the attribute, or sys.modules' entry where it is gone.
    pallas = sys.modules.get("jax.experimental.pallas")
    if attribute is None and pallas is None:
        return True  # not imported yet: nothing to build with
    if type(pallas) is not types.ModuleType or attribute not in (None, pallas):
        return False
    jax_folder = os.path.dirname(getattr(sys.modules.get("jax"), "__file__", None) or "") or None
    for name in ("pallas_call", "when", "program_id"):
        function = vars(pallas).get(name)
        if type(function) is types.FunctionType:  # where its code was compiled from
            where, roots = function.__code__.co_filename, _ROOTS
        else:  # a callable object (another JAX's wrapper, say): its class must be JAX's own, not, say,
            # the standard library's functools.partial around a function of the student's
            where = getattr(sys.modules.get(getattr(type(function), "__module__", "")), "__file__", None) or ""
            roots = (jax_folder,) if jax_folder else ()
        if not roots or not os.path.normpath(where).startswith(roots):
            return False
    return True


# Flagged by the agent after a probe ran (kernel/library.py): from the first pallas probe on.
library.watch("jax.experimental.pallas", pallas_as_installed)


def course_kernel(x_ref, y_ref, o_ref):
    """The body the lesson asks for: zero the output block at the first k step, then add one product."""
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def expected_tiling(m: int, k: int, n: int, bm: int, bn: int, bk: int):
    """The grid and (block shape, index map) of x, y and the output, as performance-12 asks:
    grid (m/bm, n/bn, k/bk), x's block (i, k), y's (k, j), the output's (i, j)."""
    return ((m // bm, n // bn, k // bk),
            [((bm, bk), lambda i, j, kk: (i, kk)), ((bk, bn), lambda i, j, kk: (kk, j))],
            ((bm, bn), lambda i, j, kk: (i, j)))


def specs(in_blocks, out_block):
    """BlockSpecs from (shape, index_map) pairs."""
    from jax.experimental import pallas as pl

    return [pl.BlockSpec(shape, index) for shape, index in in_blocks], pl.BlockSpec(*out_block)


def tiled_call(kernel, m, k, n, grid, in_specs, out_spec, *, interpret=True):
    """`pallas_call` of `kernel` for float32 x (m, k) and y (k, n), given BlockSpecs. Its third
    argument is the output's starting value (aliased to the output: the body sees it in a block
    it has not written yet)."""
    import jax
    from jax.experimental import pallas as pl

    def body(x_ref, y_ref, start_ref, o_ref):
        del start_ref  # the same buffer as o_ref
        kernel(x_ref, y_ref, o_ref)

    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((m, n), "float32"), grid=tuple(grid),
        in_specs=[*in_specs, pl.BlockSpec(memory_space=pl.ANY)], out_specs=out_spec,
        input_output_aliases={2: 0}, interpret=interpret)


def _export(call, m, k, n) -> bytes:
    import jax

    structs = [jax.ShapeDtypeStruct(shape, "float32") for shape in ((m, k), (k, n), (m, n))]
    return bytes(jax.export.export(jax.jit(call))(*structs).serialize())


def export_kernel(kernel, sizes, blocks):
    """`kernel` in the course's tiled product for these sizes and blocks, interpret mode, exported."""
    m, k, n = (int(v) for v in sizes)
    bm, bn, bk = (int(v) for v in blocks)
    grid, in_blocks, out_block = expected_tiling(m, k, n, bm, bn, bk)
    return _export(tiled_call(kernel, m, k, n, grid, *specs(in_blocks, out_block)), m, k, n)


def export_tiling(tiling, sizes, blocks):
    """The course's body with the grid and BlockSpecs `tiling` returns, interpret mode, exported:
    `pallas_call` traces the index maps as it does for any kernel."""
    m, k, n = (int(v) for v in sizes)
    bm, bn, bk = (int(v) for v in blocks)
    grid, in_specs, out_spec = tiling(m, k, n, bm, bn, bk)
    return _export(tiled_call(course_kernel, m, k, n, grid, list(in_specs), out_spec), m, k, n)
