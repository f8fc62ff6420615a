"""performance-05's hidden checks, judged in the trusted kernel from data the student's kernel sends.

Every function the checks hand to student code is built in the student's kernel by a probe
(`perfcourse.kernel.probes.remat`) from a description picked here at grading time, because a
function defined here cannot be traced by the student's JAX. For the same description this
kernel builds the same function with the same course code and computes its own reference with
its own JAX. Inputs (shapes, depths, values) are fresh for every grading run; messages never
name them. What comes back is data (strings, arrays, jaxprs flattened to tuples of names), and
each check says below what a student would have to forge to pass it without doing the work.

- `check_residual_descriptions` (test_residual_inspection): the student's
  `saved_residual_descriptions` runs, in the student's kernel, on functions of fresh kinds and
  shapes (chains of elementwise functions, two-argument functions, tanh layers over a fresh
  constant weight); it must return, line for line, what `print_saved_residuals` prints here for
  the same function and arguments, and print nothing. Forger: lines equal to JAX's own listing
  of a function it is handed only at grading time: in practice, asking JAX, which is the task.
- `check_remat_layer` (test_remat_layer): a network of a fresh number of applications of the
  student's `remat_layer`, at a fresh vector. From its jaxpr: every tanh sits inside a checkpoint
  equation (found by its parameters or by any name its primitive has had), one checkpoint per
  application, none outside. From the values reverse-mode autodiff keeps (the leaves of
  `jax.vjp`'s backward function): each one is the weight or what some application of the layer
  received or returned, as the lesson asks ("saves only what each layer application receives"),
  so a policy that saves the products or everything fails. Judged against the student's own
  layer outputs, so a layer that computes the wrong thing loses the gradient cell, not this one.
  Forger: a flattened jaxpr with exactly that many checkpoint equations around one tanh each,
  and residual arrays equal to layer outputs for a vector and depth it learns only then.
- `check_remat_gradients` (test_gradients_agree): the value and jax.grad's gradient of the
  lesson's network with the student's layer, at fresh vectors of three scales, against float64
  NumPy arithmetic here (forward-mode Jacobian accumulation: it shares no code, not even the
  direction of the recurrence, with what it checks) on the lesson's weight, rebuilt here from
  the lesson's seed. Forger: gradients of the lesson's network, accurate to the precision of
  matrix products in use (`gradient_tolerance`), at vectors it sees only then: computing them
  is the task.
- `check_reverse_recurrence` (test_reverse_recurrence): the student's recurrence on fresh
  widths, depths, weights and vectors, against the same float64 arithmetic.
- `check_recurrence_by_hand` (test_recurrence_by_hand): what a hand-written recurrence can do
  and autodiff cannot. (1) Run under `jax.make_jaxpr` on concrete NumPy arrays, every JAX
  operation it performs is recorded, and autodiff leaves its transformations (jvp, transpose)
  in every equation it records: there must be none. (2) Where JAX records nothing (NumPy
  arithmetic) or the recurrence cannot run under a trace (it turns JAX values into NumPy), it
  is handed float64 NumPy arrays and must compute in float64: JAX's autodiff here computes in
  float32, and a float32 result converted to float64 is exactly representable in float32. This
  cell never asks whether the gradient is right (test_reverse_recurrence does), so a wrong
  hand-written recurrence keeps it. Forger: a probe that reports a clean trace, or autodiff
  hidden from the trace (`jax.ensure_compile_time_eval`) run in float64 (`enable_x64`) or with
  its float32 result perturbed: deliberate evasion, each named here.

Tolerances follow from the precision of float32 matrix products in use, measured in this kernel
(`numerics.matmul_precision`: float32 operands on a CPU or GPU, bfloat16 passes on a TPU by
default), never assumed from the backend's name (`gradient_tolerance`): a product carries a
relative error of at most about PER_PRODUCT_ERROR, a value or gradient through `depth` layers
runs through 2 * depth products whose errors add up, and the check allows 2 * (depth + 1)
products' worth, doubled. Measured on a CPU (error in units of 1 + |exact|), at the lesson's depth
over 600 fresh inputs: at most 4e-7 with float32 products and 1.6e-2 with bfloat16 operands
(emulated), against 2e-5 and 8e-2 allowed; over the recurrence check's widths and depths (1 to
7) with bfloat16 operands, at most 1.1e-2 at depth 1 (3.2e-2 allowed) and 2.4e-2 at any depth
(4.8e-2 or more allowed from depth 2 on). The
residuals of test_remat_layer are compared with layer outputs computed by the same JAX from the
same operands, not with float64 arithmetic, so their tolerance (SAME_COMPUTATION) is float32
rounding whatever the product precision (both precisions measured: no difference at all), and
it must stay that tight: the products of a deep layer differ from its tanh by as little as 5e-3.

Limit (README, "Known limits"): a probe replaced in the student's own kernel is handed the inputs
picked here and can answer the remat and by-hand cells with data computed from them, without
running the student's code; the grader flags code that names the grading package.
"""
from __future__ import annotations

import contextlib
import io
import math
import re
from dataclasses import dataclass

import numpy as np

from . import CheckFailed, numerics, remote, trusted
from ..kernel.probes import remat as built

LESSON_WIDTH, LESSON_DEPTH, LESSON_SEED = 16, 4, 5
REMAT_NAMES = frozenset({"checkpoint", "remat", "remat2"})
REMAT_PARAMS = frozenset({"policy", "prevent_cse"})
# Autodiff's transformations as a recorded equation's name stack shows them: "transpose(jvp(f))".
AUTODIFF_IN_NAME_STACK = re.compile(r"(?<![\w.])(jvp|transpose|linearize|vjp)\(")

# Relative error of one float32 matrix product, at most (with margin): float32 operands (2**-24
# per rounding, summed over up to 64 terms) and bfloat16 operands (2**-8 per rounded operand).
PER_PRODUCT_ERROR = {numerics.FLOAT32: 1e-6, numerics.BFLOAT16_PASSES: 4e-3}
# Two computations of the same values by the same JAX from the same operands: float32 rounding.
SAME_COMPUTATION = {"rtol": 1e-5, "atol": 1e-6}


def gradient_tolerance(depth: int, precision: str | None = None) -> float:
    """rtol (and atol) for a value or gradient through `depth` layers against float64 arithmetic:
    2 * (depth + 1) products' errors, doubled, at the precision in use (measured here)."""
    return 4 * (depth + 1) * PER_PRODUCT_ERROR[precision or numerics.matmul_precision()]


def _close(got, exact, tolerance: float) -> bool:
    got = np.asarray(got, dtype=np.float64)
    return bool(np.all(np.isfinite(got)) and np.allclose(got, exact, rtol=tolerance, atol=tolerance))


def _beyond(tolerance: float, precision: str) -> str:
    return f"by more than the tolerance of {precision} matrix products (rtol = atol = {tolerance:.2g})"


def lesson_weight() -> np.ndarray:
    """The lesson's W, rebuilt from its seed exactly as the notebook builds it (float32)."""
    rng = np.random.default_rng(LESSON_SEED)
    weight = rng.standard_normal((LESSON_WIDTH, LESSON_WIDTH), dtype=np.float32)
    return weight / np.float32(np.sqrt(LESSON_WIDTH))


def network_gradient(v, weight, depth: int) -> np.ndarray:
    """d/dv of sum(h * h), h = tanh(weight @ ...tanh(weight @ v)) (depth layers), in float64.

    Forward mode: the Jacobian dh/dv is carried forward layer by layer, then applied to 2h.
    """
    weight = np.asarray(weight, np.float64)
    h = np.asarray(v, np.float64)
    jacobian = np.eye(h.shape[0])
    for _ in range(depth):
        h = np.tanh(weight @ h)
        jacobian = (1.0 - h * h)[:, None] * (weight @ jacobian)
    return jacobian.T @ (2.0 * h)


def network_value(v, weight, depth: int) -> float:
    weight = np.asarray(weight, np.float64)
    h = np.asarray(v, np.float64)
    for _ in range(depth):
        h = np.tanh(weight @ h)
    return float(np.sum(h * h))


def fresh_problem(rng: np.random.Generator, width: int):
    """A random float32 vector and a weight scaled so tanh is not saturated."""
    v = rng.standard_normal(width).astype(np.float32)
    weight = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
    return v, weight


# --- test_residual_inspection -----------------------------------------------------------------
_LOCATION = re.compile(r"\S*[/\\]([^/\\\s]+\.py:)")


def _normalized(line: str) -> str:
    """One listing line, its file path cut to the file name (each kernel may see another prefix)."""
    return _LOCATION.sub(r"\1", line.strip())


def reference_descriptions(spec: dict, *arrays) -> list[str]:
    """What `print_saved_residuals` prints in this kernel for the described function."""
    import jax.ad_checkpoint
    import jax.numpy as jnp

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        jax.ad_checkpoint.print_saved_residuals(built.build(spec), *[jnp.asarray(a) for a in arrays])
    return [line for line in buffer.getvalue().splitlines() if line.strip()]


def residual_cases(rng: np.random.Generator) -> list[tuple[dict, tuple]]:
    """Fresh functions and arguments: elementwise chains, a two-argument function, tanh layers."""
    def vector(shape):
        return rng.standard_normal(shape).astype(np.float32)

    ops = list(built.UNARY)
    cases = []
    for length in (1, 3, int(rng.integers(4, 8))):
        chain = [str(rng.choice(ops)) for _ in range(length)]
        cases.append(({"kind": "chain", "ops": chain}, (vector(int(rng.integers(2, 40))),)))
    shape = (int(rng.integers(2, 6)), int(rng.integers(2, 9)))
    cases.append(({"kind": "pair", "ops": [str(rng.choice(ops))]}, (vector(shape), vector(shape))))
    width = int(rng.integers(3, 24))
    weight = (rng.standard_normal((width, width)) / math.sqrt(width)).astype(np.float32)
    cases.append(({"kind": "layers", "depth": int(rng.integers(2, 7)), "weight": weight}, (vector(width),)))
    return cases


def residual_problems(describe, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    for number, (spec, arrays) in enumerate(residual_cases(rng), 1):
        reply = remote.probe("remat.residual_descriptions", describe, spec, *arrays)
        lines, printed = reply["lines"], reply["printed"]
        if printed:
            return ["saved_residual_descriptions printed while it ran: return the lines, print nothing"]
        if not isinstance(lines, list) or not all(type(line) is str for line in lines):
            return [f"saved_residual_descriptions returned {type(lines).__name__}, expected a list of strings"]
        expected = reference_descriptions(spec, *arrays)
        got = [line for line in lines if line.strip()]
        if len(got) != len(lines):
            return ["the list holds empty strings: one entry per residual, nothing else"]
        if len(got) != len(expected):
            return [f"for test function {number} the list has {len(got)} entries, but JAX lists "
                    f"{len(expected)} residuals for it: describe the function at the arguments it is given"]
        wrong = [i for i, (a, b) in enumerate(zip(got, expected), 1) if _normalized(a) != _normalized(b)]
        if wrong:
            return [f"for test function {number}, entry {wrong[0]} is not the line JAX prints for that "
                    "residual (one line per residual, in JAX's order)"]
    return []


def check_residual_descriptions(describe, rng=None) -> None:
    problems = residual_problems(describe, rng)
    if problems:
        raise CheckFailed(problems[0])


# --- test_remat_layer -----------------------------------------------------------------------
@dataclass
class RematStructure:
    wrapped: int   # outermost checkpoint equations that contain the primitive
    exposed: int   # applications of the primitive outside every checkpoint


def _rows(equations) -> list[tuple[int, int, str, frozenset]]:
    """The probe's flattened jaxpr, checked: (index, parent, primitive, parameter names)."""
    rows = []
    try:
        for index, row in enumerate(equations):
            number, parent, primitive, params = row[0], row[1], row[2], row[3]
            if number != index or type(parent) is not int or not -1 <= parent < index:
                raise ValueError
            if type(primitive) is not str or not all(type(p) is str for p in params):
                raise ValueError
            rows.append((number, parent, primitive, frozenset(params)))
    except (TypeError, ValueError, IndexError):
        raise CheckFailed("the jaxpr of the network could not be read") from None
    return rows


def structure_of(equations, primitive: str = "tanh") -> RematStructure:
    """How the applications of `primitive` sit with respect to checkpoint equations."""
    rows = _rows(equations)
    children: dict[int, list[int]] = {}
    for number, parent, _, _ in rows:
        children.setdefault(parent, []).append(number)

    def is_remat(number):
        _, _, name, params = rows[number]
        return bool(children.get(number)) and (name in REMAT_NAMES or REMAT_PARAMS <= params)

    def contains(number):
        return any(rows[c][2] == primitive or contains(c) for c in children.get(number, ()))

    found = RematStructure(0, 0)

    def walk(parent):
        for number in children.get(parent, ()):
            if is_remat(number):
                found.wrapped += contains(number)
                continue
            found.exposed += rows[number][2] == primitive
            walk(number)
    walk(-1)
    return found


def _matches(value: np.ndarray, candidates) -> bool:
    return any(value.shape == c.shape and np.allclose(value, c, **SAME_COMPUTATION) for c in candidates)


def remat_problems(remat_layer, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    depth = int(rng.integers(2, 7))
    v = rng.standard_normal(LESSON_WIDTH).astype(np.float32)
    report = remote.probe("remat.remat_report", remat_layer, v, depth)
    structure = structure_of(report["equations"])
    if structure.exposed:
        return ["the layer's tanh runs outside every checkpoint in the network's jaxpr: "
                "wrap the layer in jax.checkpoint"]
    if structure.wrapped != depth:
        return ["the network's jaxpr should have exactly one checkpoint around each application of the "
                "layer: checkpoint the layer itself, not a part of it or a group of layers"]
    activations = [trusted.array(a, dtype=np.float32, shape=(LESSON_WIDTH,)) for a in report["activations"]]
    if len(activations) != depth + 1 or not np.array_equal(activations[0], v):
        return ["the layer's outputs could not be read back"]
    residuals = [trusted.array(r) for r in report["residuals"]]
    weight = lesson_weight()
    allowed = [weight, weight.T, *activations]
    if any(r.size > 1 and not _matches(r.astype(np.float64), allowed) for r in residuals):
        return ["autodiff saves values computed inside the layer (the product, the tanh's derivative...): "
                "a rematerialized layer saves only what each application receives and recomputes the rest"]
    if not any(_matches(r.astype(np.float64), activations) for r in residuals):
        return ["autodiff of the network saves none of the layers' inputs: the residuals could not be read"]
    return []


def check_remat_layer(remat_layer, rng=None) -> None:
    problems = remat_problems(remat_layer, rng)
    if problems:
        raise CheckFailed(problems[0])


# --- test_gradients_agree ---------------------------------------------------------------------
def gradient_problems(remat_layer, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    weight = lesson_weight()
    precision = numerics.matmul_precision()
    tolerance = gradient_tolerance(LESSON_DEPTH, precision)
    for scale in (0.3, 1.0, 3.0):
        v = (scale * rng.standard_normal(LESSON_WIDTH)).astype(np.float32)
        reply = remote.probe("remat.value_and_gradient", remat_layer, v, LESSON_DEPTH)
        value = trusted.array(reply["value"], shape=())
        gradient = trusted.array(reply["gradient"], shape=(LESSON_WIDTH,))
        if not _close(value, network_value(v, weight, LESSON_DEPTH), tolerance):
            return ["remat_network computes another value than the network on a fresh input "
                    f"({_beyond(tolerance, precision)}): rematerialization must not change what the layer computes"]
        if not _close(gradient, network_gradient(v, weight, LESSON_DEPTH), tolerance):
            return ["jax.grad(remat_network) disagrees with the exact gradient on a fresh input "
                    f"({_beyond(tolerance, precision)})"]
    return []


def check_remat_gradients(remat_layer, rng=None) -> None:
    problems = gradient_problems(remat_layer, rng)
    if problems:
        raise CheckFailed(problems[0])


# --- test_reverse_recurrence ------------------------------------------------------------------
def recurrence_problems(recurrence, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    precision = numerics.matmul_precision()
    sizes = [(3, 1), (16, 2), (33, 7), (int(rng.integers(5, 25)), int(rng.integers(3, 6)))]
    for number, (width, depth) in enumerate(sizes, 1):
        v, weight = fresh_problem(rng, width)
        try:
            got = trusted.array(recurrence(v, weight, depth))
        except trusted.UntrustedResult as error:
            return [f"reverse_recurrence should return an array: {error}"]
        if got.shape != (width,):
            return [f"on fresh input {number} the result has shape {got.shape}: one value per entry of v"]
        tolerance = gradient_tolerance(depth, precision)
        if not _close(got, network_gradient(v, weight, depth), tolerance):
            return [f"on fresh input {number} (another width, depth and weight) the result is not the gradient: "
                    f"it differs from float64 arithmetic {_beyond(tolerance, precision)}"]
    return []


def check_reverse_recurrence(recurrence, rng=None) -> None:
    problems = recurrence_problems(recurrence, rng)
    if problems:
        raise CheckFailed(problems[0])


# --- test_recurrence_by_hand ------------------------------------------------------------------
def autodiff_in(equations) -> list[str]:
    """The autodiff transformations named in the recorded equations' name stacks."""
    found = set()
    try:
        for row in equations:
            found.update(AUTODIFF_IN_NAME_STACK.findall(str(row[4])))
    except (TypeError, IndexError):
        raise CheckFailed("the recurrence's trace could not be read") from None
    return sorted(found)


def by_hand_problems(recurrence, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    width, depth = int(rng.integers(6, 20)), int(rng.integers(2, 5))
    v, weight = fresh_problem(rng, width)
    program = remote.probe("remat.recurrence_program", recurrence, v, weight, depth)
    if program.get("traced") is True:
        used = autodiff_in(program["equations"])
        if used:
            return [f"the recurrence runs JAX's autodiff ({', '.join(used)} in the program JAX records): "
                    "write the backward pass by hand, without jax.grad, jax.vjp and friends"]
        if len(program["equations"]) > 0:
            return []  # its JAX operations are all on record, and none of them is autodiff
    # Nothing on record (NumPy), or no trace possible: it must keep float64 inputs in float64.
    v64, weight64 = (rng.standard_normal(width),
                     rng.standard_normal((width, width)) / math.sqrt(width))
    try:
        got = trusted.array(recurrence(v64, weight64, depth))
    except trusted.UntrustedResult as error:
        return [f"reverse_recurrence should return an array: {error}"]
    as_float32 = got.astype(np.float32).astype(got.dtype) if got.dtype.kind == "f" else got
    if got.dtype != np.float64 or np.array_equal(as_float32, got):
        return ["handed float64 NumPy arrays, the recurrence returned float32 values: a NumPy backward "
                "pass keeps float64 (JAX's autodiff here cannot); do not convert the inputs to float32"]
    return []


def check_recurrence_by_hand(recurrence, rng=None) -> None:
    problems = by_hand_problems(recurrence, rng)
    if problems:
        raise CheckFailed(problems[0])
