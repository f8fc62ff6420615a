"""Grade performance-12 (a first Pallas kernel): kernels run here, on shapes and values drawn here.

Students write `matmul_kernel(x_ref, y_ref, o_ref)` (the body of a tiled matrix product: one output
block, accumulated over the grid's last axis), `tiling(m, k, n, bm, bn, bk)` (the grid and the
BlockSpecs of that product), `tiled_traffic(m, k, n, bm, bn, bk, itemsize)` (its FLOP and the
bytes it moves to and from memory, counted by hand) and `product_tolerance(matmul)` (the error of
a matrix product measured against float64 NumPy, the precision it shows and the tolerance that
follows). No check reads a clock.

- test_matmul_kernel (`check_matmul_kernel`): *verified*. A body is a function of Pallas refs,
  which only the student's process can trace, so the course's probe (`kernel.probes.pallas`)
  puts it in a `pallas_call` there, with the course's own tiling, for sizes and blocks drawn here
  (always at least two blocks along every axis, so a body that overwrites instead of
  accumulating, or zeroes on the wrong axis, is wrong; y's blocks not square in the first draw of
  every run), in interpret mode, and exports the program (`jax.export`). The program is
  deserialized and checked (`checks.programs`), and then, whatever the probe says it is, read:
  it must hold a grid loop (a `while`) with every block slice and update (operation, operand and
  result types) that the trusted kernel's own export of the course's `pallas_call` at those sizes
  holds (so the comparison follows the installed JAX's interpret-mode text, not a pattern typed
  here), and no product (`dot_general`, `dot`, `convolution`) of a whole operand. A plain
  `jnp.dot` program, which a replaced probe once sent for 3/3, fails there. It is then run here
  on fresh values twice, its output starting (a third argument aliased to the output) as NaN and
  as values that are neither NaN nor zero (what a TPU's fast memory may hold), against float64
  NumPy at the tolerance of the matrix-product precision measured here (`checks.numerics`): a
  body that never zeroes its accumulator, or one that only replaces the interpreter's NaN, fails.
  A forger would have to send a grid loop of those block slices that computes x @ y from either
  start: a tiled product, the task itself (a whole-operand product written without `dot_general`,
  say as a broadcast multiply and a sum, beside such a loop would pass: a deliberate evasion).
- test_tiling (`check_tiling`): *observed*, then *verified*. The trusted kernel calls `tiling` with
  sizes and blocks drawn here (y's blocks not square in the first draw of every run: a y block
  written (bn, bk) passes only where bn = bk), reads the grid and each BlockSpec's `block_shape`
  as values, and calls each `index_map` (a stand-in: the call runs in the student's process) at
  every point of the grid, ints in, ints out: the grid must be (m/bm, n/bn, k/bk), the block shapes
  (bm, bk), (bk, bn) and (bm, bn), and every pick x's (i, k), y's (k, j), the output's (i, j).
  An index map that needs Python ints would pass that far, but `pallas_call` traces index maps;
  so a second probe builds the course's `pallas_call` with the course's body and the student's
  grid and BlockSpecs there (the index maps traced as for any kernel) and exports it, and that
  program is checked and run as the body's is. A forger would have to answer every index-map call
  with the block the tiling needs and send the course's tiled program: that is the tiling.
- test_traffic (`check_tiled_traffic`): fresh sizes, blocks and item sizes: 2mkn FLOP; bytes by the
  lesson's rule, a block copied in when its index changes from one grid step to the next:
  (m*k*xr + k*n*yr + m*n) * itemsize, x read xr = n/bn times and y yr = m/bm times, but x once
  where k is one block (bk = k: its block (i, 0) stays put while j runs) and y once where k and n
  are both one block; intensity their ratio. Exact to 1e-9 relative. Every run holds k in one
  block with n in several (the count that re-reads x there, the formula this lesson once taught,
  fails) and with n in one (y read once too), the textbook case of one block each way, and k in
  several blocks with n in one (y still read m/bm times: a count that reads y once wherever bn = n
  fails) and with m in one.
- test_tolerance (`check_product_tolerance`): *observed*. The trusted kernel hands in products it
  computes itself (`LentProduct`: float32 operands, operands rounded to TensorFloat-32, operands
  rounded to bfloat16), shuffled, and records the arrays each is called with. The returned
  relative error must be the one computed here for the last call's operands (max |got - exact| /
  max |exact|, to 1e-3 relative: a float32 reduction is allowed), and the precision and rtol/atol
  those of `checks.numerics` for the product handed in. A guess from the backend's name, or a
  measurement on matrices every precision multiplies exactly, names the wrong precision.
"""
from __future__ import annotations

import functools
import math
import numbers
import random
import re

import numpy as np

from ..kernel.probes.pallas import course_kernel, expected_tiling, export_kernel
from . import CheckFailed, numerics, programs, remote, trusted
from .student_calls import call_student, number

RTOL = 1e-9
ERROR_RTOL = 1e-3  # the relative error, measured with float32 or float64 reductions: same digits
SUBLANE, LANE = 8, 128  # a TPU's float32 tile: the last two block dims are multiples of (8, 128)


def _int(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    if type(value) is np.ndarray and value.shape == () and np.issubdtype(value.dtype, np.integer):
        return int(value)
    return None


def _ints(value, length: int | None = None) -> tuple[int, ...] | None:
    """A tuple or list of whole numbers (of this length) as plain ints, else None."""
    if type(value) not in (tuple, list):
        return None
    out = tuple(_int(v) for v in value)
    if any(v is None for v in out) or (length is not None and len(out) != length):
        return None
    return out


# --- the course's own kernel, tiling and references -------------------------------------------
reference_kernel = course_kernel  # the body the lesson asks for (the probe's copy: both sides build with it)


def draw_sizes(rng: np.random.Generator, *, square: bool | None = None) -> tuple[int, int, int, int, int, int]:
    """(m, k, n, bm, bn, bk): TPU-legal float32 blocks, at least two of them along every axis.
    `square=False`: y's blocks are not square (bn != bk), so a y block of (bn, bk) or (bk, bk) shows."""
    bm = SUBLANE * int(rng.integers(1, 5))
    if square is False:
        bn, bk = (LANE * int(v) for v in rng.permutation([1, 2]))
    else:
        bn, bk = LANE * int(rng.integers(1, 3)), LANE * int(rng.integers(1, 3))
    gm, gn, gk = (int(v) for v in rng.integers(2, 4, size=3))
    return bm * gm, bk * gk, bn * gn, bm, bn, bk


def operands(rng: np.random.Generator, m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit-scale float32 operands whose product is of order one."""
    return (rng.standard_normal((m, k)).astype(np.float32),
            (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32))


def poisons(rng: np.random.Generator, m: int, n: int) -> list[tuple[str, np.ndarray]]:
    """What the output holds before the body writes it: NaN (the interpreter's own filling), and
    values that are neither NaN nor zero (a TPU's fast memory holds whatever was there)."""
    finite = (rng.uniform(0.5, 2.0, (m, n)) * rng.choice([-1.0, 1.0], (m, n))).astype(np.float32)
    return [("NaN", np.full((m, n), np.nan, np.float32)), ("values neither NaN nor zero", finite)]


def _compare(got, x: np.ndarray, y: np.ndarray, what: str) -> None:
    value = trusted.array(got, dtype=np.float32, shape=(x.shape[0], y.shape[1]))
    numerics.check_close(value, x.astype(np.float64) @ y.astype(np.float64), what)


# --- the program a probe exported: really the course's pallas_call? ------------------------------
_SLICING = re.compile(r"stablehlo\.(dynamic_slice|dynamic_update_slice)\b.*:\s*\(([^()]*)\)\s*->\s*(tensor<[^>]*>)")
_PRODUCT = re.compile(r"stablehlo\.(dot_general|dot|convolution)\b")
_ARRAY = re.compile(r"tensor<(?:\d+x)+\w+>")


def block_moves(text: str) -> set[tuple[str, tuple[str, ...], str]]:
    """Every (operation, array operand types, result type) of a program's dynamic slices and
    updates: the blocks its grid loop reads and writes (scalar indices left out)."""
    found = set()
    for line in text.splitlines():
        match = _SLICING.search(line)
        if match:
            found.add((match.group(1), tuple(_ARRAY.findall(match.group(2))), match.group(3)))
    return found


@functools.lru_cache(maxsize=64)
def reference_moves(m, k, n, bm, bn, bk) -> frozenset:
    """The block moves of the course's own pallas_call at these sizes, exported here: what any
    interpret-mode pallas_call with these BlockSpecs shows on this JAX, whatever its text's form."""
    import jax

    data = export_kernel(course_kernel, [m, k, n], [bm, bn, bk])
    return frozenset(block_moves(jax.export.deserialize(bytearray(data)).mlir_module()))


def check_grid_program(program, m, k, n, bm, bn, bk, what: str) -> None:
    """The program is an interpret-mode pallas_call over this tiling: a grid loop (a while) that
    reads the blocks the course's own call reads, and no product of a whole operand."""
    text = program.mlir_module()
    whole = {f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>"}
    missing = reference_moves(m, k, n, bm, bn, bk) - block_moves(text)
    if "stablehlo.while" not in programs.operations(text) or missing:
        raise CheckFailed(f"{what} came back as a program without the grid loop of the course's pallas_call "
                          f"(blocks of {bm} x {bk} and {bk} x {bn} sliced step by step): the grader runs your "
                          "code in the course's pallas_call, nothing else")
    for line in text.splitlines():
        if _PRODUCT.search(line) and whole & set(_ARRAY.findall(line)):
            raise CheckFailed(f"{what} came back as a program that multiplies a whole operand, not blocks: the "
                              "grader runs your code in the course's pallas_call, nothing else")


def run_grid_program(program, rng, m, k, n, what: str) -> None:
    """Run it here on fresh operands, from each poison, against float64 NumPy x @ y."""
    import jax.numpy as jnp

    x, y = operands(rng, m, k, n)
    exact = x.astype(np.float64) @ y.astype(np.float64)
    for name, start in poisons(rng, m, n):
        try:
            got = np.asarray(program.call(jnp.asarray(x), jnp.asarray(y), jnp.asarray(start)))
        except Exception as exc:
            raise CheckFailed(f"{what} did not run ({type(exc).__name__})") from None
        if not np.all(np.isfinite(got)) or np.allclose(got, exact + start, rtol=1e-3, atol=1e-3):
            raise CheckFailed(f"{what}, its output blocks starting as {name}, kept what they held before the "
                              "first step: an output block starts uninitialized (NaN in interpret mode, whatever "
                              "fast memory held on a TPU), so set it to zero at the first step of the grid's last "
                              "axis (pl.program_id(2) == 0) before adding to it")
        _compare(got, x, y, f"{what}, its output blocks starting as {name}, against float64 NumPy x @ y")


# --- test_matmul_kernel -----------------------------------------------------------------------
def check_matmul_kernel(matmul_kernel, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for square in (False, None):  # y's blocks not square in every run, then any
        m, k, n, bm, bn, bk = draw_sizes(rng, square=square)
        specs = [((m, k), "float32"), ((k, n), "float32"), ((m, n), "float32")]
        what = (f"your kernel body in a pallas_call over a {m // bm} x {n // bn} x {k // bk} grid of "
                f"{bm} x {bk} and {bk} x {bn} blocks picked at grading time")
        data = call_student(f"building and exporting {what}", remote.probe, "pallas.export_kernel", matmul_kernel,
                            [m, k, n], [bm, bn, bk], advice="read and write whole blocks through the refs "
                            "(x_ref[...], o_ref[...]) with JAX operations only")
        program = programs.program_from(data, specs, what=what)
        check_grid_program(program, m, k, n, bm, bn, bk, what)
        run_grid_program(program, rng, m, k, n, what + " (each step must add its x block times its y block "
                         "to the output block)")


# --- test_tiling ------------------------------------------------------------------------------
def _spec(spec, what: str):
    """(block shape, index_map) of a BlockSpec of the student's process."""
    try:
        shape, index_map = spec.block_shape, spec.index_map
    except Exception:
        raise CheckFailed(f"{what} is not a pl.BlockSpec with a block shape and an index map") from None
    shape = _ints(shape, 2)
    if shape is None:
        raise CheckFailed(f"{what}'s block shape should be two whole numbers")
    if not callable(index_map):
        raise CheckFailed(f"{what} has no index map (a function of the grid indices)")
    return shape, index_map


def _table(index_map, want, grid, blocks, what: str) -> None:
    """The block `index_map` picks at every grid point (called with ints), checked against `want`."""
    for point in np.ndindex(*grid):
        point = tuple(int(p) for p in point)
        picked = call_student(f"{what}'s index map at grid point {point}", index_map, *point)
        picked = _ints(picked, 2)
        if picked is None:
            raise CheckFailed(f"{what}'s index map should return a tuple of two block indices (whole numbers)")
        if not all(0 <= p < b for p, b in zip(picked, blocks)):
            raise CheckFailed(f"{what}'s index map picks block {picked} at grid point {point}, outside the "
                              f"array's {blocks[0]} x {blocks[1]} blocks")
        if picked != tuple(want(*point)):
            raise CheckFailed(f"{what}'s index map picks block {picked} at grid point {point}, not "
                              f"{tuple(want(*point))} (x's block (i, k), y's block (k, j), the output's block "
                              "(i, j) at grid point (i, j, k))")


def check_tiling(tiling, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for square in (False, None):  # y's blocks not square in every run, then any
        m, k, n, bm, bn, bk = draw_sizes(rng, square=square)
        where = f"(sizes and blocks picked at grading time: bm={bm}, bn={bn}, bk={bk})"
        answer = call_student(f"tiling {where}", tiling, m, k, n, bm, bn, bk)
        if type(answer) not in (tuple, list) or len(answer) != 3:
            raise CheckFailed("tiling should return (grid, in_specs, out_specs)")
        grid, in_specs, out_spec = answer
        grid = _ints(grid, 3)
        want_grid, want_in, want_out = expected_tiling(m, k, n, bm, bn, bk)
        if grid != want_grid:
            raise CheckFailed(f"the grid is {grid}, not (m // bm, n // bn, k // bk) {where}: one step per output "
                              "block and k block, the k blocks last so the body can accumulate over them")
        try:
            in_specs = list(in_specs)
        except Exception:
            in_specs = None
        if in_specs is None or len(in_specs) != 2:
            raise CheckFailed("in_specs should hold two BlockSpecs, one for x and one for y")
        for spec, name, (want, pick), extent in ((in_specs[0], "x's BlockSpec", want_in[0], (m, k)),
                                                 (in_specs[1], "y's BlockSpec", want_in[1], (k, n)),
                                                 (out_spec, "the output's BlockSpec", want_out, (m, n))):
            shape, index_map = _spec(spec, name)
            if shape != want:
                raise CheckFailed(f"{name} has blocks of {shape}, not {want} {where}")
            _table(index_map, pick, grid, (extent[0] // shape[0], extent[1] // shape[1]), name)
        # The same tiling as pallas_call uses it: index maps traced (an index map that needs Python ints
        # cannot be), in the course's pallas_call with the course's body, exported there and run here.
        what = f"the course's kernel body in a pallas_call with your grid and BlockSpecs {where}"
        data = call_student(f"building {what}", remote.probe, "pallas.export_tiling", tiling, [m, k, n],
                            [bm, bn, bk], advice="pallas_call traces each index map with traced grid indices, "
                            "not Python ints, so compute the block indices with arithmetic on them (no int(), "
                            "no if on their values)")
        program = programs.program_from(data, [((m, k), "float32"), ((k, n), "float32"), ((m, n), "float32")],
                                        what=what)
        check_grid_program(program, m, k, n, bm, bn, bk, what)
        run_grid_program(program, rng, m, k, n, what)


# --- test_traffic -----------------------------------------------------------------------------
def expected_traffic(m, k, n, bm, bn, bk, itemsize) -> dict:
    """A block is copied in when the block index its BlockSpec picks changes from one grid step to
    the next (grid (m/bm, n/bn, k/bk), its last axis fastest)."""
    gm, gn, gk = m // bm, n // bn, k // bk
    x_reads = gn if gk > 1 else 1            # x's block (i, kk): the same across j when k is one block
    y_reads = gm if gk > 1 or gn > 1 else 1  # y's block (kk, j): the same at every step when both are one block
    flops = 2 * m * k * n
    moved = (m * k * x_reads + k * n * y_reads + m * n) * itemsize
    return {"flops": float(flops), "bytes": float(moved), "intensity": flops / moved}


TRAFFIC_HINTS = {
    "flops": "a product does 2 * m * k * n FLOP, whatever the tiling",
    "bytes": "a block is copied in when the block its BlockSpec picks changes from one grid step to the next: "
             "x once per column block of the output (n / bn times), y once per row block (m / bm times), each "
             "output block written once; but where k is one block (bk = k), x's block (i, 0) stays put while j "
             "runs (x is read once), and y's too where n is also one block",
    "intensity": "the intensity is flops / bytes, in FLOP per byte",
}


def check_tiled_traffic(tiled_traffic, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    cases = []
    for itemsize in (4, 2, 1, 8):
        bm, bn, bk = (int(rng.choice([8, 16, 32, 64, 128, 256])), int(rng.choice([128, 256, 512])),
                      int(rng.choice([128, 256, 512])))
        m, k, n = bm * int(rng.integers(1, 40)), bk * int(rng.integers(1, 40)), bn * int(rng.integers(1, 40))
        cases.append((m, k, n, bm, bn, bk, itemsize))
    # In every run: k in one block (x's block stays put across j), then k and n in one block (y's block
    # stays put too), then one block each way (the textbook count).
    bm, bn = int(rng.choice([8, 16, 32, 64])), int(rng.choice([128, 256]))
    cases.append((bm * int(rng.integers(2, 9)), 512, bn * int(rng.integers(2, 9)), bm, bn, 512, 4))
    cases.append((bm * int(rng.integers(2, 9)), 256, 384, bm, 384, 256, 2))
    cases.append((256, 512, 384, 256, 384, 512, 4))
    # And k in several blocks with n in one (y's block (kk, 0) still changes at every step: y is read
    # m / bm times, not once), then with m in one (x read n / bn times).
    cases.append((bm * int(rng.integers(2, 9)), 128 * int(rng.integers(2, 5)), bn, bm, bn, 128, 4))
    cases.append((bm, 128 * int(rng.integers(2, 5)), bn * int(rng.integers(2, 9)), bm, bn, 128, 2))
    for case in cases:
        got = call_student("tiled_traffic", tiled_traffic, *case)
        if not isinstance(got, dict):
            raise CheckFailed(f"tiled_traffic should return a dict, got {type(got).__name__}")
        for key, want in expected_traffic(*case).items():
            if key not in got:
                raise CheckFailed(f"tiled_traffic's dict has no {key!r}")
            value = number(got[key])
            if value is None or not math.isclose(value, want, rel_tol=RTOL, abs_tol=0.0):
                raise CheckFailed(f"{key} is not right (sizes, blocks and item size {case[-1]} picked at "
                                  f"grading time): {TRAFFIC_HINTS[key]}")


# --- test_tolerance ---------------------------------------------------------------------------
def _round_mantissa(values: np.ndarray, bits: int) -> np.ndarray:
    """float32 values rounded to `bits` explicit mantissa bits (round to nearest even)."""
    raw = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    drop = 23 - bits
    half = (1 << (drop - 1)) - 1 + ((raw >> drop) & 1)
    return (((raw + half) >> drop) << drop).astype(np.uint32).view(np.float32)


class LentProduct:
    """A matrix product at a known precision, computed in the trusted kernel for the student's
    `product_tolerance`; it keeps the operands of its last call."""

    BITS = {numerics.FLOAT32: 23, numerics.TF32: 10, numerics.BFLOAT16_PASSES: 7}

    def __init__(self, precision: str):
        self._precision = precision
        self.calls = 0
        self.last = None

    def __call__(self, a, b):
        a = np.array(trusted.array(a), dtype=np.float32)
        b = np.array(trusted.array(b), dtype=np.float32)
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.size * b.shape[1] > 1 << 24:
            raise ValueError("matmul takes two float32 matrices (m, k) and (k, n), at most 2**24 m*k*n")
        self.calls += 1
        self.last = (a, b)
        bits = self.BITS[self._precision]
        rounded = [v if bits == 23 else _round_mantissa(v, bits) for v in (a, b)]
        return (rounded[0].astype(np.float64) @ rounded[1].astype(np.float64)).astype(np.float32)


def relative_error(got, a, b) -> float:
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(np.asarray(got, np.float64) - exact)) / np.max(np.abs(exact)))


def check_product_tolerance(product_tolerance, rng: random.Random | None = None) -> None:
    rng = rng or random.Random()
    precisions = list(numerics.PRECISIONS)
    rng.shuffle(precisions)
    for precision in precisions:
        product = LentProduct(precision)
        got = call_student("product_tolerance, for a product the grader handed in,", product_tolerance, product,
                           advice="call it as matmul(a, b) on two float32 matrices")
        if product.calls == 0 or product.last is None:
            raise CheckFailed("product_tolerance never called the product it was given: measure it")
        if not isinstance(got, dict):
            raise CheckFailed(f"product_tolerance should return a dict, got {type(got).__name__}")
        a, b = product.last
        error = relative_error(product(a, b), a, b)
        measured = number(got.get("relative_error"))
        if measured is None or not math.isclose(measured, error, rel_tol=ERROR_RTOL, abs_tol=1e-12):
            raise CheckFailed("relative_error is not max |matmul(a, b) - exact| / max |exact| for the matrices "
                              "you multiplied last, exact being the float64 NumPy product")
        want = {"precision": numerics.precision_of(error), **numerics.TOLERANCES[numerics.precision_of(error)]}
        if numerics.precision_of(error) != precision:
            raise CheckFailed("a product the grader handed in computes in "
                              f"{numerics.DESCRIPTIONS[precision]}, but your matrices do not show it: multiply "
                              "the lesson's random matrices, which every rounding of the operands changes")
        for key, value in want.items():
            if key not in got:
                raise CheckFailed(f"product_tolerance's dict has no {key!r}")
            if isinstance(value, str):
                if type(got[key]) is not str or got[key] != value:
                    raise CheckFailed(f"precision is {got[key]!r} for a relative error of {error:.2g}; the "
                                      f"lesson's table gives {value!r}")
            elif number(got[key]) != value:
                raise CheckFailed(f"{key} should be {value:g}, the tolerance the lesson's table gives "
                                  f"{want['precision']}")
