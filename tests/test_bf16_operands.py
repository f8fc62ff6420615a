"""Every lesson is right on a TPU's and a GPU's default matrix-product precision: emulated on the CPU.

`tests/bf16_operands.py` rounds the operands of every float32 matrix product at DEFAULT precision
to bfloat16 and sums in float32, as a TPU does by default; `tests/tf32_operands.py` rounds them to
TF32 (10 mantissa bits), as a recent NVIDIA GPU does. The fast tests prove each emulation changes
what JAX computes (and only that); the end-to-end tests execute each lesson's source notebook,
solutions, public and hidden checks, on a kernel with the bfloat16 emulation and 8 devices, as on
an 8-chip TPU (tests/test_tpu_like.py), and each solved release notebook on a kernel with the TF32
emulation and one device, as on a one-GPU machine (tests/test_gpu_like.py); here, the project's
own checks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

import bf16_operands

PROBE = r"""
import json, sys
import numpy as np, jax, jax.numpy as jnp
from jax import lax
if sys.argv[1] == "emulated":
    import bf16_operands
    bf16_operands.install()
elif sys.argv[1] == "tf32":
    import tf32_operands
    tf32_operands.install()
from perfcourse.checks import numerics

rng = np.random.default_rng(3)
a = rng.standard_normal((5, 7)).astype(np.float32)
b = rng.standard_normal((7, 3)).astype(np.float32)
bits = 10 if sys.argv[1] == "tf32" else 7
rounded = lambda v: np.asarray(lax.reduce_precision(jnp.asarray(v, jnp.float32), 8, bits), np.float64)
paths = {
    "@": lambda: jnp.asarray(a) @ b,
    "jnp.dot": lambda: jnp.dot(a, b),
    "jnp.einsum": lambda: jnp.einsum("ij,jk->ik", a, b),
    "lax.dot_general": lambda: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
    "jax.jit": lambda: jax.jit(jnp.matmul)(a, b),
    "lax.scan": lambda: lax.scan(lambda c, x: (c, c @ x), jnp.asarray(a), jnp.stack([b, b]))[1][1],
    "jax.vmap": lambda: jax.vmap(lambda row: row @ b)(a),
    "jax.checkpoint": lambda: jax.checkpoint(lambda x: x @ b)(a),
}
with_rounding = rounded(a) @ rounded(b)
without = a.astype(np.float64) @ b.astype(np.float64)
gradient = np.asarray(jax.grad(lambda x: jnp.sum(x @ b))(a), np.float64)
compiled = jax.jit(jnp.matmul).lower(a, b).compile()
costs = compiled.cost_analysis()
costs = costs[0] if isinstance(costs, list) else costs
with jax.default_matmul_precision("float32"):
    in_float32_block = numerics.matmul_precision()
print(json.dumps({
    "precision": numerics.matmul_precision(),
    "in_float32_block": in_float32_block,
    "highest_error": numerics.matmul_relative_error(precision=lax.Precision.HIGHEST),
    "from_rounded": {name: float(np.max(np.abs(np.asarray(f(), np.float64) - with_rounding)))
                     for name, f in paths.items()},
    "from_float32": {name: float(np.max(np.abs(np.asarray(f(), np.float64) - without))) for name, f in paths.items()},
    "gradient_from_rounded": float(np.max(np.abs(gradient - np.ones((5, 3)) @ rounded(b).T))),
    "flops": costs.get("flops"), "hand_flops": 2 * 5 * 7 * 3,
}))
"""


def probe(mode: str) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(bf16_operands.HERE)}
    proc = subprocess.run([sys.executable, "-c", PROBE, mode], text=True, capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_emulation_rounds_every_float32_product_and_only_at_default_precision():
    plain, emulated = probe("plain"), probe("emulated")
    assert plain["precision"] == "float32" and plain["in_float32_block"] == "float32"
    assert emulated["precision"] == "bfloat16 passes"
    # Asking for float32 works as on a TPU: in a block, or on the product.
    assert emulated["in_float32_block"] == "float32" and emulated["highest_error"] < 1e-6
    for name, difference in emulated["from_rounded"].items():
        # The product of the rounded operands, summed in float32 (not float64: a few float32 ulps).
        assert difference < 1e-5, name
        assert emulated["from_float32"][name] > 1e-3, name  # and visibly not the float32 product
        assert plain["from_float32"][name] < 1e-5, name
    assert emulated["gradient_from_rounded"] < 1e-5  # autodiff's products are rounded too
    # The compiler's estimates leave the roundings out: a product still counts 2*m*k*n flops.
    assert emulated["flops"] == plain["flops"] == emulated["hand_flops"]


@pytest.mark.slow
def test_the_tf32_emulation_rounds_to_ten_mantissa_bits_and_only_at_default_precision():
    tf32 = probe("tf32")
    assert tf32["precision"] == "TF32" and tf32["in_float32_block"] == "float32" and tf32["highest_error"] < 1e-6
    for name, difference in tf32["from_rounded"].items():
        assert difference < 1e-5, name  # the product of the rounded operands, summed in float32
        assert 1e-5 < tf32["from_float32"][name] < 1e-2, name  # visibly rounded, far less than bfloat16
    assert tf32["gradient_from_rounded"] < 1e-5
    assert tf32["flops"] == tf32["hand_flops"]


def test_roundings_are_counted_from_the_compiled_text():
    line = ('  %reduce_precision.0 = f32[8,16]{1,0} reduce-precision(%param_0), exponent_bits=8, '
            'mantissa_bits=7, metadata={op_name="jit(f)/while/body/bf16_operands/reduce_precision"}')
    other = line.replace("bf16_operands/", "")  # a reduce_precision of the program's own
    assert bf16_operands.rounding_flops("\n".join([line, line.replace("f32[8,16]", "f32[]"), other])) == 8 * 16 + 1
    tf32 = line.replace("mantissa_bits=7", "mantissa_bits=10").replace("bf16_operands/", "tf32_operands/")
    assert bf16_operands.rounding_flops(tf32) == 0
    assert bf16_operands.rounding_flops(tf32, mantissa_bits=10, tag="tf32_operands") == 8 * 16


# ------------------------------------------------------------------------ the project, end to end

@pytest.mark.e2e
def test_the_projects_checks_pass_the_solution_with_bfloat16_operands(tmp_path):
    """projects/performance-audit/tests/check.py, stage 4, in a process with the emulation installed."""
    check = ROOT / "projects" / "performance-audit" / "tests" / "check.py"
    run = ("import sys, runpy, bf16_operands; bf16_operands.install(); "
           f"sys.argv = [{str(check)!r}, *sys.argv[1:]]; runpy.run_path(sys.argv[0], run_name='__main__')")
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(bf16_operands.HERE)}
    proc = subprocess.run([sys.executable, "-c", run, "--implementation", "solution", "--stage", "4",
                           "--evidence-dir", str(tmp_path / "evidence")],
                          cwd=ROOT, text=True, capture_output=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("PASS performance-audit stage 4")
