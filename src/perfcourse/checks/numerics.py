"""Tolerances that follow from the matrix-product precision in use, measured rather than assumed.

A float32 matrix product is not computed the same way everywhere. The CPU backend multiplies the
float32 operands themselves. A TPU, by default, rounds each operand to bfloat16 (8 significant
bits instead of float32's 24) and accumulates the products in float32: one bfloat16 pass. NVIDIA
GPUs from the A100 (Ampere) on multiply float32 matrices in TensorFloat-32 by default in JAX: each
operand rounded to a 10-bit mantissa (11 significant bits), products accumulated in float32
(published: NVIDIA's A100 architecture whitepaper, and JAX's documentation of
`jax.default_matmul_precision`; not measured here, where no GPU is available). `precision=` on a
product (`jax.lax.Precision.HIGHEST`) or `jax.default_matmul_precision("float32")` around a block
asks for float32 on every backend; JAX records that choice in each product when it traces it.

Rather than guess from the backend's name, `matmul_precision()` multiplies two fixed random 64x64
matrices in JAX (default precision, as the code under test uses it) and in float64 NumPy, and reads
the error relative to the largest entry. Three regimes, each a factor of more than thirty from the
next, measured on the CPU (and, for the reduced ones, with the CPU emulations in tests/):

  float32 operands     about 2.5e-7   below BOUNDARIES[0] = 1e-5
  TF32                 about 3.3e-4   from 1e-5 to BOUNDARIES[1] = 1e-3
  bfloat16 passes      about 2.4e-3   from 1e-3 up

(the boundaries are near the geometric means of their neighbours: 9e-6 and 9e-4). A comparison of
a JAX result with an independent NumPy computation then uses the tolerance of that precision
(TOLERANCES). Release notebooks cannot import this package, so each one that compares with NumPy
carries the same few lines (same matrices, same boundaries, same tolerances) and explains them to
the student.

How the tolerances were chosen, for results of order 1 made of one matrix product of unit-scale
operands followed by elementwise functions (the course's workloads):

  float32          rtol = atol = 1e-5: about a hundred float32 roundoffs (2**-24 ~ 6e-8); what is
                   seen is about 1e-7, so a correct result never fails and a wrong one (a missing
                   tanh, a transposed operand, other shapes) differs by far more.
  TF32             rtol = atol = 4e-3: about eight TF32 roundoffs (2**-11 ~ 4.9e-4); the worst seen
                   over 400 random inputs of the course's shapes (k up to 256) is about 1.6e-3, in
                   the TF32-operand emulation (tests/tf32_operands.py).
  bfloat16 passes  rtol = atol = 3e-2: about eight bfloat16 roundoffs (2**-8 ~ 3.9e-3); the worst
                   seen over thousands of random inputs of the course's shapes is about 1.1e-2 to
                   1.5e-2 (|error| / (1 + |expected|)), in the bfloat16-operand test mode.

A computation with no matrix product in it (performance-04's elementwise recurrence) is float32 at
every precision setting, whatever `matmul_precision()` says; but float32 is not one answer for a
transcendental function. XLA's CPU `tanh` and `exp` agree with NumPy's to about 1e-7; a TPU
evaluates them with its own approximations (a TPU v5e, jax 0.10.2, measured: tanh(1) = 0.7615967
against NumPy's 0.7615942, 3.3e-6 relative). `elementwise_precision()` measures it as the product
is measured (fixed values, tanh and exp in JAX against float64 NumPy, the error in units of
1 + |exact|, the measure rtol = atol applies): below TRANSCENDENTAL_BOUNDARY = 1e-6 FLOAT32, else
APPROXIMATE_TRANSCENDENTALS, whose tolerance is rtol = atol = 3e-4. On that TPU performance-04's
recurrence (a tanh per step, contracting: |a| < 0.9) differed from float64 NumPy by at most 2.5e-5
over 60 random draws of the check's shapes and lengths (1 to 119 steps), so the tolerance is twelve
times the worst seen; a wrong result (a missing tanh, a wrong carry) differs by far more.

The hidden checks measure the precision in the trusted kernel, which runs the same Python, JAX and
backend as the student's kernel: never a value the student's process reports.
"""
from __future__ import annotations

import numpy as np

from . import CheckFailed

FLOAT32 = "float32"
TF32 = "TF32"
BFLOAT16_PASSES = "bfloat16 passes"
APPROXIMATE_TRANSCENDENTALS = "float32 with approximate transcendentals"
PRECISIONS = (FLOAT32, TF32, BFLOAT16_PASSES)  # matrix products, from the most precise to the least
# The error of the fixed 64x64 product (relative to its largest entry) at which the operands were
# rounded to fewer bits: below BOUNDARIES[0] float32 operands (about 2.5e-7), below BOUNDARIES[1]
# TF32 (about 3.3e-4), above it bfloat16 passes (about 2.4e-3).
BOUNDARIES = (1e-5, 1e-3)
BOUNDARY = BOUNDARIES[0]  # float32 operands below it, operands rounded to fewer bits above it
SIZE, SEED = 64, 0
TOLERANCES = {FLOAT32: {"rtol": 1e-5, "atol": 1e-5}, TF32: {"rtol": 4e-3, "atol": 4e-3},
              BFLOAT16_PASSES: {"rtol": 3e-2, "atol": 3e-2},
              APPROXIMATE_TRANSCENDENTALS: {"rtol": 3e-4, "atol": 3e-4}}
TRANSCENDENTAL_BOUNDARY = 1e-6  # error of tanh and exp in units of 1 + |exact|: about 1e-7 on a CPU
DESCRIPTIONS = {FLOAT32: "float32 arithmetic",
                TF32: "matrix products in TensorFloat-32 (an NVIDIA GPU's default)",
                BFLOAT16_PASSES: "matrix products with bfloat16 passes (a TPU's default)",
                APPROXIMATE_TRANSCENDENTALS: "float32 arithmetic with a TPU's approximate tanh and exp"}


def precision_of(relative_error: float) -> str:
    """The regime a measured relative error of the fixed product falls in."""
    if relative_error < BOUNDARIES[0]:
        return FLOAT32
    return TF32 if relative_error < BOUNDARIES[1] else BFLOAT16_PASSES


def matmul_relative_error(size: int = SIZE, seed: int = SEED, precision=None) -> float:
    """max |JAX product - float64 product| / max |float64 product|, for fixed random float32
    matrices, at `precision` (None: the default in effect here and now)."""
    import jax.numpy as jnp

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    got = np.asarray(jnp.matmul(jnp.asarray(a), jnp.asarray(b), precision=precision), dtype=np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(got - exact)) / np.max(np.abs(exact)))


def matmul_precision() -> str:
    """FLOAT32, TF32 or BFLOAT16_PASSES: how this process's JAX multiplies float32 matrices right now."""
    return precision_of(matmul_relative_error())


def transcendental_relative_error() -> float:
    """max |JAX f(v) - float64 f(v)| / (1 + |float64 f(v)|) for f in tanh and exp, fixed float32 v in [-3, 3]."""
    import jax.numpy as jnp

    v = np.linspace(-3, 3, 601, dtype=np.float32)
    worst = 0.0
    for jax_f, numpy_f in ((jnp.tanh, np.tanh), (jnp.exp, np.exp)):
        got = np.asarray(jax_f(jnp.asarray(v)), dtype=np.float64)
        exact = numpy_f(v.astype(np.float64))
        worst = max(worst, float(np.max(np.abs(got - exact) / (1 + np.abs(exact)))))
    return worst


def elementwise_precision() -> str:
    """FLOAT32 or APPROXIMATE_TRANSCENDENTALS: for a result with no matrix product in it."""
    return FLOAT32 if transcendental_relative_error() < TRANSCENDENTAL_BOUNDARY else APPROXIMATE_TRANSCENDENTALS


def tolerance(precision: str | None = None) -> dict:
    """rtol and atol for a float32 result of one matrix product, at `precision` (default: the
    precision measured now). For a result with no matrix product in it, pass elementwise_precision()."""
    return dict(TOLERANCES[precision or matmul_precision()])


def check_close(actual, expected, what: str, precision: str | None = None, **tolerances) -> None:
    """Raise CheckFailed (worded for the student) when `actual` and `expected` differ beyond the
    tolerance of `precision` (default: the matrix-product precision measured now; explicit `rtol`
    and `atol` override it), or `actual` holds a NaN or an infinity. The message never shows the
    values compared."""
    precision = precision or matmul_precision()
    tol = {**TOLERANCES[precision], **tolerances}
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise CheckFailed(f"{what}: the result has shape {actual.shape}, which is not the shape expected")
    bad = ~np.isclose(actual, expected, rtol=tol["rtol"], atol=tol["atol"]) | ~np.isfinite(actual)
    if bad.any():
        raise CheckFailed(f"{what}: {int(bad.sum())} of {bad.size} entries differ from an independent "
                          f"NumPy computation by more than rtol={tol['rtol']:g}, atol={tol['atol']:g} "
                          f"(the tolerance of {DESCRIPTIONS[precision]})")
