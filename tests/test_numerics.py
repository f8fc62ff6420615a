"""Tolerances follow the matrix-product precision in use (perfcourse.checks.numerics), and the
release notebooks' own lines (which cannot import the course) measure it the same way."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest

from conftest import ROOT

from perfcourse.checks import CheckFailed, numerics


def test_this_cpu_multiplies_float32_and_highest_asks_for_it_anywhere():
    assert numerics.matmul_precision() == numerics.FLOAT32
    assert numerics.matmul_relative_error() < numerics.BOUNDARIES[0] / 30
    assert numerics.matmul_relative_error(precision=jax.lax.Precision.HIGHEST) < numerics.BOUNDARIES[0] / 30
    assert numerics.tolerance() == numerics.TOLERANCES[numerics.FLOAT32]


def _rounded_product_error(mantissa_bits: int) -> float:
    """The fixed product's relative error with both operands rounded to `mantissa_bits` (float64 sums)."""
    rng = np.random.default_rng(numerics.SEED)
    a = rng.standard_normal((numerics.SIZE, numerics.SIZE)).astype(np.float32)
    b = rng.standard_normal((numerics.SIZE, numerics.SIZE)).astype(np.float32)
    rounded = [np.asarray(jax.lax.reduce_precision(jnp.asarray(m), 8, mantissa_bits), np.float64) for m in (a, b)]
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(rounded[0] @ rounded[1] - exact)) / np.max(np.abs(exact)))


def test_three_regimes_each_far_from_the_boundaries_around_it():
    """float32 (about 2.5e-7), TF32 (10 mantissa bits, about 3.3e-4), bfloat16 (7 bits, about 2.4e-3):
    each regime's error lies at least twice as far as its nearest boundary, and is classified so."""
    low, high = numerics.BOUNDARIES
    assert numerics.matmul_relative_error() < low / 30
    tf32, bf16 = _rounded_product_error(10), _rounded_product_error(7)
    assert 30 * low < tf32 < high / 3 and bf16 > 2 * high
    assert [numerics.precision_of(e) for e in (numerics.matmul_relative_error(), tf32, bf16)] == [
        numerics.FLOAT32, numerics.TF32, numerics.BFLOAT16_PASSES]
    assert list(numerics.TOLERANCES) == list(numerics.DESCRIPTIONS) == [*numerics.PRECISIONS,
                                                                        numerics.APPROXIMATE_TRANSCENDENTALS]
    tolerances = [numerics.TOLERANCES[p]["rtol"] for p in numerics.PRECISIONS]
    assert tolerances == sorted(tolerances)  # a coarser precision, a looser tolerance


TPU_V5E_TANH_ERROR = 3.3e-6  # measured: tanh(1) in float32 on a TPU v5e (jax 0.10.2), 0.7615967 against 0.7615942
TPU_V5E_RECURRENCE_ERROR = 2.5e-5  # measured there: performance-04's scan against float64, worst of 60 draws


def test_transcendentals_here_are_float32_and_far_from_a_tpus():
    """The CPU's tanh and exp (about 1e-7) and a TPU v5e's (3.3e-6 at tanh(1)) lie on either side of
    the boundary, each at least three times from it; the TPU's tolerance is ten times the worst
    error its recurrence showed."""
    here = numerics.transcendental_relative_error()
    assert here < numerics.TRANSCENDENTAL_BOUNDARY / 3 and TPU_V5E_TANH_ERROR > 3 * numerics.TRANSCENDENTAL_BOUNDARY
    assert numerics.elementwise_precision() == numerics.FLOAT32
    approximate = numerics.TOLERANCES[numerics.APPROXIMATE_TRANSCENDENTALS]
    assert approximate["rtol"] >= 10 * TPU_V5E_RECURRENCE_ERROR > numerics.TOLERANCES[numerics.FLOAT32]["rtol"]
    value = np.tanh(np.linspace(-3, 3, 50))
    numerics.check_close(value * (1 + TPU_V5E_TANH_ERROR * 10), value, "tpu-like",
                         precision=numerics.APPROXIMATE_TRANSCENDENTALS)
    with pytest.raises(CheckFailed):  # a missing tanh
        numerics.check_close(np.linspace(-3, 3, 50), value, "no tanh", precision=numerics.APPROXIMATE_TRANSCENDENTALS)


def test_check_close_judges_at_the_precision_given_and_shows_no_values():
    expected = np.linspace(-1, 1, 12).reshape(3, 4)
    numerics.check_close(expected + 5e-6, expected, "close", precision=numerics.FLOAT32)
    numerics.check_close(expected + 1e-2, expected, "close", precision=numerics.BFLOAT16_PASSES)
    numerics.check_close(expected + 2e-3, expected, "close", precision=numerics.TF32)
    with pytest.raises(CheckFailed,
                       match=r"rtol=0.004, atol=0.004 \(the tolerance of matrix products in TensorFloat-32"):
        numerics.check_close(expected + 1e-2, expected, "off", precision=numerics.TF32)
    with pytest.raises(CheckFailed,
                       match=r"off: 12 of 12 entries .* rtol=1e-05, atol=1e-05 \(the tolerance of float32") as failed:
        numerics.check_close(expected + 1e-2, expected, "off", precision=numerics.FLOAT32)
    assert "0.01" not in str(failed.value) and "0.3" not in str(failed.value)
    with pytest.raises(CheckFailed, match="1 of 12"):
        numerics.check_close(np.where(expected == 1, np.nan, expected), expected, "nan")
    with pytest.raises(CheckFailed, match="shape"):
        numerics.check_close(expected.T, expected, "transposed")


@pytest.mark.parametrize("lesson", ["performance-01", "performance-08"])
def test_the_lessons_measure_the_precision_as_the_checks_do(lesson):
    """Each lesson's own lines (which cannot import the course) classify as numerics does: the same
    boundaries and tolerances, written out; and for any error, the same regime."""
    nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "MATMUL_PRECISION =" in c.source]
    namespace = {"jax": jax, "jnp": jnp, "np": np}
    exec(cell.source, namespace)
    assert namespace["MATMUL_PRECISION"] == numerics.matmul_precision()
    assert namespace["precision_of"](3.3e-4) == numerics.TF32
    assert namespace["precision_of"](2.4e-3) == numerics.BFLOAT16_PASSES
    for error in (2.5e-7, 9e-6, 1.1e-5, 3.3e-4, 9e-4, 1.1e-3, 2.4e-3, 0.1):
        assert namespace["precision_of"](error) == numerics.precision_of(error), error
    assert numerics.BOUNDARIES == (1e-5, 1e-3) and "< 1e-5" in cell.source and "< 1e-3" in cell.source
    for precision in numerics.PRECISIONS:  # the matrix-product regimes the lessons' lines carry
        tolerance = numerics.TOLERANCES[precision]
        assert tolerance["rtol"] == tolerance["atol"]
        assert f'"{precision}": {tolerance["rtol"]:.0e}'.replace("e-0", "e-") in cell.source
