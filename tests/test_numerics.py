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
    assert numerics.matmul_relative_error() < numerics.BOUNDARY / 100
    assert numerics.matmul_relative_error(precision=jax.lax.Precision.HIGHEST) < numerics.BOUNDARY / 100
    assert numerics.tolerance() == numerics.TOLERANCES[numerics.FLOAT32]


def test_bfloat16_operands_fall_far_above_the_boundary():
    rng = np.random.default_rng(numerics.SEED)
    a = rng.standard_normal((numerics.SIZE, numerics.SIZE)).astype(np.float32)
    b = rng.standard_normal((numerics.SIZE, numerics.SIZE)).astype(np.float32)
    rounded = [np.asarray(jnp.asarray(m).astype(jnp.bfloat16), np.float64) for m in (a, b)]
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = np.max(np.abs(rounded[0] @ rounded[1] - exact)) / np.max(np.abs(exact))
    assert error > 10 * numerics.BOUNDARY


def test_check_close_judges_at_the_precision_given_and_shows_no_values():
    expected = np.linspace(-1, 1, 12).reshape(3, 4)
    numerics.check_close(expected + 5e-6, expected, "close", precision=numerics.FLOAT32)
    numerics.check_close(expected + 1e-2, expected, "close", precision=numerics.BFLOAT16_PASSES)
    with pytest.raises(CheckFailed, match=r"off: 12 of 12 entries .* rtol=1e-05, atol=1e-05 \(the tolerance of float32") as failed:
        numerics.check_close(expected + 1e-2, expected, "off", precision=numerics.FLOAT32)
    assert "0.01" not in str(failed.value) and "0.3" not in str(failed.value)
    with pytest.raises(CheckFailed, match="1 of 12"):
        numerics.check_close(np.where(expected == 1, np.nan, expected), expected, "nan")
    with pytest.raises(CheckFailed, match="shape"):
        numerics.check_close(expected.T, expected, "transposed")


def test_the_lessons_measure_the_precision_as_the_checks_do():
    nb = nbformat.read(ROOT / "source" / "performance-01" / "performance-01.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "MATMUL_PRECISION =" in c.source]
    namespace = {"jax": jax, "jnp": jnp, "np": np}
    exec(cell.source, namespace)
    assert namespace["matmul_error"] == numerics.matmul_relative_error()
    assert namespace["MATMUL_PRECISION"] == numerics.matmul_precision()
    assert "matmul_error < 1e-4" in cell.source and numerics.BOUNDARY == 1e-4
    for precision, tolerance in numerics.TOLERANCES.items():
        assert tolerance["rtol"] == tolerance["atol"]
        assert f'"{precision}": {tolerance["rtol"]:.0e}'.replace("e-0", "e-") in cell.source
