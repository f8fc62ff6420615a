"""A TPU's default float32 matrix products, emulated on the CPU: bfloat16 operands, float32 sums.

On a TPU, a float32 matrix product at the default precision rounds each operand to bfloat16 (8
significant bits) and accumulates the exact products in float32 (one bfloat16 pass);
`precision=jax.lax.Precision.HIGHEST` or `jax.default_matmul_precision("float32")` makes it
float32. `install()` gives this process's CPU backend the same default: it registers a CPU
lowering of JAX's `dot_general` primitive that rounds every float32 operand whose precision is
DEFAULT to the nearest bfloat16 (round half to even: XLA's reduce-precision, the same values as
`.astype(jnp.bfloat16)`), keeps it in float32, and hands it to JAX's own lowering. Every float32
matrix product goes through that primitive, jitted or not: `@`, `jnp.matmul`, `jnp.dot`,
`jnp.einsum`, `lax.dot_general`, products inside `scan`, `vmap` and `jax.checkpoint`, and those
autodiff makes for gradients. HIGH and HIGHEST (and explicit dot algorithms) are left alone, so
asking for float32 works as on a TPU. Only programs lowered after `install()` are affected.
`Compiled.cost_analysis()` leaves the roundings' flops out (a TPU rounds inside its matrix unit),
so the compiler's flop count of a product stays 2*m*k*n. The machinery takes the number of mantissa
bits kept (`install_rounding`): tests/tf32_operands.py keeps 10, an NVIDIA GPU's TF32.

As a kernel: `python -m bf16_operands -f CONNECTION_FILE` installs the emulation, checks that a
product really is rounded (else it exits non-zero, so nothing passes by accident), then runs
ipykernel's kernel. `kernelspec(base, name)` writes such a kernelspec (JAX held to the CPU,
PYTHONPATH at this folder) into a Jupyter data directory to put on JUPYTER_PATH.
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TAG = "bf16_operands"  # the name of the rounding in the compiled program's metadata
MANTISSA_BITS = 7      # bfloat16: 7 explicit mantissa bits, 8 significant
_installed: tuple | None = None  # (mantissa bits, tag) of the rounding this process installed


def _rounding_pattern(mantissa_bits: int, tag: str):
    """One rounding in a compiled program's text: its float32 shape, and the name it carries."""
    return re.compile(r"= f32\[([0-9,]*)\]\S* reduce-precision\(.*exponent_bits=8, mantissa_bits="
                      + str(mantissa_bits) + r'\b.*op_name="[^"]*\b' + tag + r'/reduce_precision"')


def install() -> None:
    """Make this process's CPU float32 products at DEFAULT precision round their operands to bfloat16."""
    install_rounding(MANTISSA_BITS, TAG)


def install_rounding(mantissa_bits: int, tag: str) -> None:
    """Make this process's CPU float32 products at DEFAULT precision round each float32 operand to
    `mantissa_bits` explicit mantissa bits (float32's 8 exponent bits kept), in float32, before
    JAX's own lowering multiplies and sums them in float32. `tag` names the roundings in the
    compiled program. One rounding per process: bfloat16's (7 bits) or TF32's (10 bits,
    tests/tf32_operands.py)."""
    global _installed
    if _installed == (mantissa_bits, tag):
        return
    if _installed is not None:
        raise RuntimeError(f"this process already rounds matrix-product operands ({_installed[1]})")
    import numpy as np
    from jax import lax
    from jax._src.interpreters import mlir
    from jax._src.lax import lax as lax_internal

    primitive = lax_internal.dot_general_p
    cpu_rules = getattr(mlir, "_platform_specific_lowerings", {}).get("cpu", {})
    original = (cpu_rules.get(primitive) or mlir._lowerings[primitive]).rule
    # float32 -> the nearest value with `mantissa_bits` (round half to even), kept in float32:
    # XLA's reduce-precision (for 7 bits, the same values as `.astype(jnp.bfloat16)`).
    rounding = mlir.lower_fun(lambda x: lax.reduce_precision(x, exponent_bits=8, mantissa_bits=mantissa_bits),
                              multiple_results=False)

    def lowering(ctx, lhs, rhs, *, precision, **params):
        if not isinstance(precision, (lax_internal.DotAlgorithm, lax_internal.DotAlgorithmPreset)):
            operands = []
            for operand, aval, operand_precision in zip((lhs, rhs), ctx.avals_in[:2],
                                                        lax_internal._full_precision(precision)):
                if aval.dtype == np.float32 and operand_precision == lax_internal.Precision.DEFAULT:
                    operand, = rounding(ctx.replace(avals_in=[aval], avals_out=[aval],
                                                       name_stack=ctx.name_stack.extend(tag)), operand)
                operands.append(operand)
            lhs, rhs = operands
        return original(ctx, lhs, rhs, precision=precision, **params)

    mlir.register_lowering(primitive, lowering, platform="cpu")
    _leave_rounding_out_of_cost_analysis(_rounding_pattern(mantissa_bits, tag))
    _installed = (mantissa_bits, tag)


def rounding_flops(hlo_text: str, mantissa_bits: int = MANTISSA_BITS, tag: str = TAG) -> int:
    """The flops XLA's cost analysis counts for the emulation's roundings in a compiled program:
    one per rounded element (a program's loop body is counted once, as the analysis counts it)."""
    return _flops(_rounding_pattern(mantissa_bits, tag), hlo_text)


def _flops(pattern, hlo_text: str) -> int:
    return sum(math.prod(int(n) for n in match.group(1).split(",") if n)
               for match in pattern.finditer(hlo_text))


def _leave_rounding_out_of_cost_analysis(pattern) -> None:
    """`Compiled.cost_analysis()` without the roundings' flops: a TPU or a GPU rounds inside its
    matrix unit, and a lesson that compares the compiler's flop count of a product with 2*m*k*n
    must see the product's flops alone."""
    from jax._src import stages

    original = stages.Compiled.cost_analysis

    def cost_analysis(self):
        costs = original(self)
        extra = _flops(pattern, self.as_text() or "")

        def without(entry):
            if extra and isinstance(entry, dict) and isinstance(entry.get("flops"), (int, float)):
                return {**entry, "flops": type(entry["flops"])(entry["flops"] - extra)}
            return entry

        return [without(entry) for entry in costs] if isinstance(costs, list) else without(costs)

    cost_analysis.__doc__ = original.__doc__
    stages.Compiled.cost_analysis = cost_analysis


def relative_error(precision=None) -> float:
    """The error of a fixed 64x64 float32 product, relative to its largest entry (as the lessons measure it)."""
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    got = np.asarray(jnp.matmul(jnp.asarray(a), jnp.asarray(b), precision=precision), np.float64)
    return float(np.max(np.abs(got - exact)) / np.max(np.abs(exact)))


def kernelspec(base: Path, name: str, python: str = sys.executable, devices: int | None = None,
               module: str = "bf16_operands", display: str = "bfloat16 matrix-product operands") -> Path:
    """A Jupyter data directory holding one kernelspec that runs `module` (this one, or
    tf32_operands) as the kernel; with `devices`, JAX's CPU backend has that many devices (as a
    TPU v5e-8 has 8 chips)."""
    folder = Path(base) / "kernels" / name
    folder.mkdir(parents=True)
    env = {"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(HERE)}
    if devices is not None:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [python, "-m", module, "-f", "{connection_file}"],
        "display_name": f"{name} ({display})", "language": "python", "env": env,
    }))
    return Path(base)


def launch(install_emulation, name: str, low: float, high: float, expected: str) -> None:
    """Install an emulation, check that a float32 product's relative error falls in [low, high)
    (else exit non-zero, so nothing passes by accident), then run ipykernel's kernel."""
    install_emulation()
    error = relative_error()
    if not low <= error < high:
        sys.exit(f"{name}: the emulation is not in effect (a float32 product's relative error is "
                 f"{error:.1e}, expected about {expected})")
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


def main() -> None:
    launch(install, "bf16_operands", 1e-3, 1.0, "2.4e-3")


if __name__ == "__main__":
    main()
