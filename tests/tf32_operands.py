"""An NVIDIA GPU's default float32 matrix products, emulated on the CPU: TF32 operands, float32 sums.

NVIDIA GPUs from the A100 (Ampere) on multiply float32 matrices on their tensor cores in
TensorFloat-32 (TF32) when allowed, and JAX allows it at the default precision: each operand keeps
float32's 8 exponent bits and 10 of its 23 mantissa bits (11 significant bits), and the products are
accumulated in float32 (published: NVIDIA's A100 Tensor Core GPU architecture whitepaper, and JAX's
documentation of `jax.default_matmul_precision`, whose "tensorfloat32" names it; not measured here).
`install()` gives this process's CPU backend the same default with bf16_operands' machinery: every
float32 operand of a DEFAULT-precision `dot_general` rounded to 10 mantissa bits (round half to
even, XLA's reduce-precision), kept in float32, then multiplied and summed in float32 by JAX's own
lowering; HIGH, HIGHEST and explicit algorithms are left alone, and `cost_analysis()` leaves the
roundings' flops out. A fixed 64x64 product's relative error is then about 3.3e-4: between float32's
2.5e-7 and bfloat16 passes' 2.4e-3, as `perfcourse.checks.numerics` classifies it.

As a kernel: `python -m tf32_operands -f CONNECTION_FILE` installs the emulation, checks that a
product really is rounded to TF32 (else it exits non-zero), then runs ipykernel's kernel.
`kernelspec(base, name, devices=...)` writes such a kernelspec.
"""
from __future__ import annotations

import sys
from pathlib import Path

import bf16_operands

TAG = "tf32_operands"  # the name of the rounding in the compiled program's metadata
MANTISSA_BITS = 10     # TF32: 10 explicit mantissa bits, 11 significant


def install() -> None:
    """Make this process's CPU float32 products at DEFAULT precision round their operands to TF32."""
    bf16_operands.install_rounding(MANTISSA_BITS, TAG)


def rounding_flops(hlo_text: str) -> int:
    return bf16_operands.rounding_flops(hlo_text, MANTISSA_BITS, TAG)


def kernelspec(base: Path, name: str, python: str = sys.executable, devices: int | None = None) -> Path:
    """A Jupyter data directory holding one kernelspec that runs this module as the kernel."""
    return bf16_operands.kernelspec(base, name, python, devices, module="tf32_operands",
                                    display="TF32 matrix-product operands")


def main() -> None:
    bf16_operands.launch(install, "tf32_operands", 1e-5, 1e-3, "3.3e-4")


if __name__ == "__main__":
    main()
