"""Put the student's Pallas kernel body in a `pallas_call` and export it (`jax.export`).

A kernel body is a function of Pallas refs: only the process that defines it can trace it. The
trusted kernel picks the sizes and the blocks; this probe builds the course's tiled product
around the body, in interpret mode (plain JAX operations, which jax.export can serialize and the
trusted kernel can run on any backend), and returns the program's bytes. What the trusted kernel
then checks is the program's results on values it never sends (`perfcourse.checks.pallas`, which
builds its own calls with `tiled_call` too).
"""
from __future__ import annotations

PROBES = ("export_kernel",)


def expected_tiling(m: int, k: int, n: int, bm: int, bn: int, bk: int):
    """The grid and (block shape, index map) of x, y and the output, as performance-12 asks:
    grid (m/bm, n/bn, k/bk), x's block (i, k), y's (k, j), the output's (i, j)."""
    return ((m // bm, n // bn, k // bk),
            [((bm, bk), lambda i, j, kk: (i, kk)), ((bk, bn), lambda i, j, kk: (kk, j))],
            ((bm, bn), lambda i, j, kk: (i, j)))


def tiled_call(kernel, m, k, n, grid, in_blocks, out_block, *, interpret=True):
    """`pallas_call` of `kernel` for float32 x (m, k) and y (k, n); blocks as (shape, index_map)."""
    import jax
    from jax.experimental import pallas as pl

    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), "float32"), grid=tuple(grid),
        in_specs=[pl.BlockSpec(shape, index) for shape, index in in_blocks],
        out_specs=pl.BlockSpec(*out_block), interpret=interpret)


def export_kernel(kernel, sizes, blocks):
    """`kernel` in the course's tiled product for these sizes and blocks, interpret mode, exported."""
    import jax

    m, k, n = (int(v) for v in sizes)
    bm, bn, bk = (int(v) for v in blocks)
    grid, in_blocks, out_block = expected_tiling(m, k, n, bm, bn, bk)
    call = jax.jit(tiled_call(kernel, m, k, n, grid, in_blocks, out_block, interpret=True))
    structs = [jax.ShapeDtypeStruct((m, k), "float32"), jax.ShapeDtypeStruct((k, n), "float32")]
    return bytes(jax.export.export(call)(*structs).serialize())
