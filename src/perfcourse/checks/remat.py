"""performance-05's hidden checks. What they believe, this kernel observed or verified itself.

Every cell is judged here, in the trusted kernel, from what it saw the student's code do or from
programs it examined and ran itself; inputs (shapes, depths, functions, values) are picked at
grading time and messages never name them. Course code in the student's kernel (the probes,
`perfcourse.kernel.probes.remat`) only exports programs there: a replaced probe can send other
bytes, and they then have to be programs that pass the checks below, which is the work asked.
Parsing a program taints this kernel (`programs.program_from`): the grader stops it after the
notebook.

- `check_residual_descriptions` (test_residual_inspection), *observed*: the student's
  `saved_residual_descriptions` is called from here, by the channel, not by a probe, on
  functions of this module built at grading time (`residual_instrument`: chains of products,
  powers, quotients and products with a fresh constant, at fresh shapes, of one or two
  arguments). The student's code holds such a function as a stand-in: when JAX traces it there,
  its body runs here, counting the traces, and applies its operations to stand-ins for the
  student's tracers, so its operations and constants are nowhere in the student's kernel until it
  is traced. The lines returned must be, line for line, what `print_saved_residuals` prints here
  for the same function (the source location of each operation left out: there it is the
  channel's code, here this module), and the function must have been traced while the student's
  code ran. Whether it printed meanwhile is *evidence only*: a probe runs it once more with its
  output captured, and a replaced probe can say it printed nothing.
- `check_remat_layer` (test_remat_layer), *verified*: programs exported for networks of the
  student's `remat_layer` (`remat_programs`): the layer itself, and for a network of a fresh
  number of applications and for a network of one, its forward pass (the network's value and
  every value reverse-mode autodiff saves: the leaves of `jax.vjp`'s backward function) and its
  backward pass from those values alone. Run here at a fresh vector: the layer program gives
  what each application receives and returns; the forward program's value is that of those
  layers; every saved value is the weight or one of those layer values, as the lesson asks
  ("saves only what each layer application receives"), and what each application receives is
  among them (a policy that saves the products, a checkpoint around part of the layer, a custom
  derivative that saves outputs, or no checkpoint at all, each fail here). The backward program,
  compiled here, computes a tanh for every value of every layer again (the compiler's
  transcendental count); it returns the gradient (against float64 arithmetic where the layer
  program computes the lesson's layer, else against directional derivatives of the layers'
  network taken here, so a layer that computes the wrong thing keeps this cell and loses the
  gradient cell); and handed other saved inputs and another saved output, it returns what the
  one-layer network's backward program returns applied layer after layer at those inputs: each
  layer's backward pass is recomputed from the input it saved, by the same code, and reads no
  saved output of a layer in place of recomputing it. A forger must send programs that do all
  that: a rematerialized network, which is the task.
- `check_remat_gradients` (test_gradients_agree), *verified*: the program of the lesson's
  network of the student's layer with its value and jax.grad's gradient (`network_program`),
  run here at fresh vectors of three scales, against float64 NumPy arithmetic here
  (forward-mode Jacobian accumulation: it shares no code, not even the direction of the
  recurrence, with what it checks) on the lesson's weight, rebuilt from the lesson's seed. A
  forger must send a program that computes the lesson network's gradient: the task.
- `check_reverse_recurrence` (test_reverse_recurrence), *observed*: the student's recurrence is
  called from here on fresh widths, depths, weights and vectors; its results are judged against
  the same float64 arithmetic.
- `check_recurrence_by_hand` (test_recurrence_by_hand): what a hand-written recurrence can do
  and autodiff cannot. Called from here with float64 NumPy arrays (*observed*). If JAX can
  trace it, the program JAX records for it (`recurrence_program`, float32 arguments) is examined
  here (*verified*): it must carry JAX's name stacks, none of them naming an autodiff
  transformation (jvp, transpose: autodiff leaves them on every operation it records), and it
  must compute what the function returned. If it cannot be traced (NumPy), what it returned must
  be float64 values a float32 computation cannot give (JAX's autodiff here computes in float32).
  This cell never asks whether the gradient is right (test_reverse_recurrence does), so a wrong
  hand-written recurrence keeps it. Limits, each deliberate evasion: a program whose recorded
  name stacks were edited, derivatives by a transformation that records none (Taylor series,
  `jax.experimental.jet`), or autodiff run in float64 (`enable_x64`) where nothing is traced.
- `check_timing_verdict` (test_timing_verdict), *observed*: the student's `compare_timings` is
  called from here on two lists of samples drawn here at a fresh scale (`timing_cases`: a clear
  slowdown and speed-up, a slowdown that one slow ordinary call would hide in a full range, medians
  past the other's middle half whose middle halves overlap, on either side, middle halves that
  touch exactly, 5 to 11 samples, shuffled); the medians and middle halves (to 1e-9 relative) and
  the verdict of performance-01's middle halves (`halves.compare`, exactly) must be the ones
  computed here. No clock is read: the timer is given (performance-01's, graded there).

Tolerances follow from the precision of float32 matrix products in use, measured in this kernel
(`numerics.matmul_precision`: float32 operands on a CPU, TF32 on a recent NVIDIA GPU and bfloat16
passes on a TPU by default), never assumed from the backend's name (`gradient_tolerance`): a product carries a
relative error of at most about PER_PRODUCT_ERROR, a value or gradient through `depth` layers
runs through 2 * depth products whose errors add up, and the check allows 2 * (depth + 1)
products' worth, doubled. Measured on a CPU (error in units of 1 + |exact|), at the lesson's depth
over 600 fresh inputs: at most 4e-7 with float32 products and 1.6e-2 with bfloat16 operands
(emulated), against 2e-5 and 8e-2 allowed; over the recurrence check's widths and depths (1 to
7) with bfloat16 operands, at most 1.1e-2 at depth 1 (3.2e-2 allowed) and 2.4e-2 at any depth
(4.8e-2 or more allowed from depth 2 on). The saved values of test_remat_layer are compared with
layer outputs computed by the same JAX from the same operands, not with float64 arithmetic, so
their tolerance (SAME_COMPUTATION) is float32 rounding whatever the product precision, and it
must stay that tight: the products of a deep layer differ from its tanh by as little as 5e-3.
Its directional derivatives (for a layer that is not the lesson's) are least-squares slopes
through DIFFERENCE_POINTS values of the layers' network within DIFFERENCE_STEP of the vector,
within DIFFERENCE_TOLERANCE of the gradient's length: such a layer may round its operands to
bfloat16, which makes the network a staircase. Measured on a CPU over 3000 directions (depths 2
to 6, float32 and bfloat16 layers): at most 0.08 of the gradient's length, against 0.3 allowed;
a program that is not the gradient misses by about its length. The backward programs at other
saved inputs compute the same operations on the same values as the one-layer program applied
layer after layer: measured, no difference at all, bfloat16 layers included (COMPOSED allows a
rounding in bfloat16).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from . import CheckFailed, halves, numerics, programs, remote, trusted
from .student_calls import call_student

LESSON_WIDTH, LESSON_DEPTH, LESSON_SEED = 16, 4, 5
# Autodiff's transformations as a recorded name stack shows them: "jit(f)/transpose(jvp(f))/mul".
AUTODIFF_IN_NAME_STACK = re.compile(r"(?<![\w.])(jvp|transpose|linearize|vjp)\(")
# The name of a location in a program's text: JAX writes each operation's name stack there.
_LOCATION_NAME = re.compile(r'loc\("([^"\n]*)"')

# Relative error of one float32 matrix product, at most (with margin): float32 operands (2**-24
# per rounding, summed over up to 64 terms), TF32 operands (2**-11 per rounded operand: an eighth
# of bfloat16's) and bfloat16 operands (2**-8 per rounded operand).
PER_PRODUCT_ERROR = {numerics.FLOAT32: 1e-6, numerics.TF32: 5e-4, numerics.BFLOAT16_PASSES: 4e-3}
# Two computations of the same values by the same JAX from the same operands: float32 rounding.
SAME_COMPUTATION = {"rtol": 1e-5, "atol": 1e-6}
# Central differences of the layers' network, against the backward program's gradient.
DIFFERENCE_STEP, DIFFERENCE_POINTS = 0.15, 9
DIFFERENCE_TOLERANCE = 0.3
# The network's backward pass at other saved inputs against the one-layer network's, layer after
# layer: the same operations on the same values, rounded otherwise (a layer in bfloat16: 2**-8).
COMPOSED = 1e-2


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
# The operations an instrument applies: Python operators and one method only, so that the same
# code runs on JAX's tracers here (the reference) and on stand-ins for the student's tracers
# there, where each operation is a request the student's kernel answers.
def _apply(x, args, operation: str, parameter):
    if operation == "square":
        return x * x
    if operation == "cube":
        return x ** 3
    if operation == "root":  # (x * x + c) ** 0.5
        return (x * x + parameter) ** 0.5
    if operation == "reciprocal":
        return 1.0 / (x * x + parameter)
    if operation == "scale":
        return x * parameter
    if operation == "absolute":
        return abs(x)
    if operation == "product":  # with a fresh constant matrix
        return x @ parameter
    if operation == "times":  # with the second argument
        return x * args[1]
    if operation == "over":
        return x / (args[1] * args[1] + parameter)
    raise ValueError(f"unknown operation {operation!r}")


ELEMENTWISE = ("square", "cube", "root", "reciprocal", "scale", "absolute")


@dataclass(frozen=True)
class ResidualCase:
    operations: tuple        # (operation, parameter) pairs, applied in turn to the first argument
    arrays: tuple            # the arguments, float32
    total: bool              # end with .sum(), or return the array


def residual_instrument(case: ResidualCase, traces: list | None = None):
    """The case's function, defined here. `traces` gets one entry per call: whether every argument
    was a JAX tracer (a stand-in for one, when the student's kernel traces it)."""
    import jax

    operations = case.operations
    total = case.total

    # *args: the student's kernel sees a stand-in whose signature is (*args, **kwargs), so JAX
    # names the arguments the same way on both sides ("args[0]").
    def traced_function(*args, **kwargs):
        if traces is not None:
            traces.append(bool(args) and all(isinstance(a, jax.core.Tracer) for a in args))
        x = args[0]
        for operation, parameter in operations:
            x = _apply(x, args, operation, parameter)
        return x.sum() if total else x
    return traced_function


def residual_cases(rng: np.random.Generator) -> list[ResidualCase]:
    """Fresh functions and arguments: short and long elementwise chains, a two-argument function,
    and layers of products with a fresh constant matrix."""
    def array(shape):
        return rng.standard_normal(shape).astype(np.float32)

    def elementwise():
        operation = str(rng.choice(ELEMENTWISE))
        return operation, float(np.float32(rng.uniform(0.5, 2.0)))

    cases = []
    for length in (1, int(rng.integers(2, 4)), int(rng.integers(4, 8))):
        chain = tuple(elementwise() for _ in range(length))
        cases.append(ResidualCase(chain, (array(int(rng.integers(2, 40))),), bool(rng.integers(2))))
    shape = (int(rng.integers(2, 6)), int(rng.integers(2, 9)))
    pair = [elementwise(), ("times", None), elementwise(), ("over", float(np.float32(rng.uniform(0.5, 2.0))))]
    order = rng.permutation(len(pair))
    cases.append(ResidualCase(tuple(pair[i] for i in order), (array(shape), array(shape)), True))
    width = int(rng.integers(3, 24))
    layers = []
    for _ in range(int(rng.integers(2, 5))):
        weight = (rng.standard_normal((width, width)) / math.sqrt(width)).astype(np.float32)
        layers += [("product", weight), elementwise()]
    cases.append(ResidualCase(tuple(layers), (array(width),), True))
    return cases


def _normalized(line: str) -> str:
    """One listing line without the source location of the operation it names: the student's
    kernel applies the instrument's operations in the channel's code, this kernel in this module."""
    line = line.strip()
    if " output of " in line or " named " in line:
        return line.split(" from ", 1)[0] + " from (a source location)"
    return line


def reference_descriptions(case: ResidualCase) -> list[str]:
    """What `print_saved_residuals` prints in this kernel for the case's function."""
    import contextlib
    import io

    import jax.ad_checkpoint

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        jax.ad_checkpoint.print_saved_residuals(residual_instrument(case), *case.arrays)
    return [line for line in buffer.getvalue().splitlines() if line.strip()]


def _listing(reply, number: int) -> list[str] | str:
    """The lines a call returned, as plain strings, or what is wrong with them."""
    if type(reply) is not list and not isinstance(reply, remote.RemoteList):
        return f"saved_residual_descriptions returned {type(reply).__name__}, expected a list of strings"
    lines = remote.values_only(reply)
    if not all(type(line) is str for line in lines):
        return "saved_residual_descriptions should return a list of strings"
    if any(not line.strip() for line in lines):
        return "the list holds empty strings: one entry per residual, nothing else"
    return lines


def residual_problems(describe, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    cases = residual_cases(rng)
    for number, case in enumerate(cases, 1):
        traces: list = []
        reply = call_student(f"saved_residual_descriptions for test function {number}", describe,
                             residual_instrument(case, traces), *case.arrays,
                             advice="describe the function it is given, at the arguments it is given")
        lines = _listing(reply, number)
        if type(lines) is str:
            return [lines]
        if not any(traces):
            return [f"saved_residual_descriptions never traced test function {number}: ask JAX "
                    "(print_saved_residuals) about the function it is given"]
        expected = reference_descriptions(case)
        if len(lines) != len(expected):
            return [f"for test function {number} the list has {len(lines)} entries, but JAX lists "
                    f"{len(expected)} residuals for it: describe the function at the arguments it is given"]
        wrong = [i for i, (a, b) in enumerate(zip(lines, expected), 1) if _normalized(a) != _normalized(b)]
        if wrong:
            return [f"for test function {number}, entry {wrong[0]} is not the line JAX prints for that "
                    "residual (one line per residual, in JAX's order)"]
    # Evidence only: whether it printed, captured by a probe (a replaced probe can say it did not).
    case = cases[0]
    reply = remote.probe("remat.residual_descriptions", describe, residual_instrument(case), *case.arrays)
    if type(reply) is not dict or reply.get("printed") != "":
        return ["saved_residual_descriptions printed while it ran: return the lines, print nothing"]
    return []


def check_residual_descriptions(describe, rng=None) -> None:
    problems = residual_problems(describe, rng)
    if problems:
        raise CheckFailed(problems[0])


# --- programs the student's kernel exported ---------------------------------------------------
_VECTOR = [([LESSON_WIDTH], "float32")]


def _program(data, specs, what: str):
    """A program a probe sent, deserialized and checked (`programs.program_from`), and a function
    that runs it here on flat arguments and returns its flat results as NumPy arrays."""
    import jax

    try:
        program = programs.program_from(data, specs, what=what)
    except CheckFailed:
        raise
    except Exception:  # bytes that deserialize but hold no readable module
        raise CheckFailed(f"{what} did not come back as a JAX program the grader can examine") from None

    def flat(*arguments):
        args, kwargs = jax.tree_util.tree_unflatten(program.in_tree, arguments)
        return jax.tree_util.tree_leaves(program.call(*args, **kwargs))

    try:
        compiled = jax.jit(flat).lower(*[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in program.in_avals]).compile()
    except Exception:
        raise CheckFailed(f"{what} came back as a program the grader cannot run") from None

    def run(*arguments):
        try:
            return [np.asarray(result) for result in compiled(*arguments)]
        except Exception:
            raise CheckFailed(f"{what} came back as a program the grader cannot run") from None
    run.compiled = compiled
    return program, run


def _results(program, what: str, *shapes) -> None:
    """The program returns exactly these float32 shapes."""
    got = [(tuple(a.shape), str(a.dtype)) for a in program.out_avals]
    if got != [(tuple(shape), "float32") for shape in shapes]:
        raise CheckFailed(f"{what} came back as a program with other results than it should have")


def _exports(name: str, what: str, *args):
    return call_student(f"exporting {what} as JAX programs for the grader to examine", remote.probe, name, *args,
                        advice="keep remat_layer a jittable function of one vector")


def _transcendentals(run) -> float:
    """The compiler's count of transcendental functions (tanh, exp...) a program computes, here."""
    costs = run.compiled.cost_analysis()
    if isinstance(costs, (list, tuple)):  # older versions: one dict per program
        costs = costs[0] if costs else None
    return float((costs or {}).get("transcendentals", 0.0))


# --- test_remat_layer -----------------------------------------------------------------------
def _matches(value: np.ndarray, candidate: np.ndarray) -> bool:
    return value.shape == candidate.shape and bool(np.allclose(value, candidate, **SAME_COMPUTATION))


def _network_value(layer, v, depth: int) -> float:
    h = np.asarray(v, np.float32)
    for _ in range(depth):
        (h,) = layer(h)
    return float(np.sum(np.asarray(h, np.float64) ** 2))


def _slope(layer, v, direction, depth: int) -> float:
    """The layers' network's derivative along `direction` at v: the least-squares line through
    its values at DIFFERENCE_POINTS points within DIFFERENCE_STEP of v."""
    steps = np.linspace(-DIFFERENCE_STEP, DIFFERENCE_STEP, DIFFERENCE_POINTS)
    values = np.array([_network_value(layer, (v + t * direction).astype(np.float32), depth) for t in steps])
    return float(np.sum(steps * (values - values.mean())) / np.sum(steps * steps))


def _is_the_gradient(gradient, layer, v, depth: int, activations, rng) -> bool:
    """Is `gradient` the gradient of the network of the student's layer at v? Where the layer
    computes the lesson's layer (within the precision in use), against float64 arithmetic, as
    test_gradients_agree; otherwise (a layer computing something else, or in bfloat16) against
    its directional derivatives, taken here from the layer's program."""
    precision = numerics.matmul_precision()
    weight = lesson_weight().astype(np.float64)
    if all(_close(after, np.tanh(weight @ before.astype(np.float64)), gradient_tolerance(1, precision))
           for before, after in zip(activations, activations[1:])):
        return _close(gradient, network_gradient(v, weight, depth), gradient_tolerance(depth, precision))
    size = float(np.linalg.norm(gradient))
    if not np.isfinite(size) or size == 0.0:
        return False
    directions = [gradient / size] + [u / np.linalg.norm(u) for u in rng.standard_normal((2, LESSON_WIDTH))]
    return all(abs(_slope(layer, v, u, depth) - float(u @ gradient)) <= DIFFERENCE_TOLERANCE * size
               for u in directions)


def _network_programs(sent, depth: int):
    """The forward and backward programs a probe sent for a network of `depth` layers."""
    forward_program, forward = _program(sent.get("forward"), _VECTOR, "the network's forward pass")
    if not forward_program.out_avals or forward_program.out_avals[0].shape != ():
        raise CheckFailed("the network's forward pass came back as a program with other results than it should have")
    saved_specs = [(list(a.shape), str(a.dtype)) for a in forward_program.out_avals[1:]]
    backward_program, backward = _program(sent.get("backward"), saved_specs + [([], "float32")],
                                          "the network's backward pass")
    _results(backward_program, "the network's backward pass", (LESSON_WIDTH,))
    return forward, backward


def _replaced(saved, replacements) -> list[np.ndarray]:
    """The saved values, each one that is a value of `replacements` (old, new) replaced by its new."""
    out = []
    for r in saved:
        found = [new for old, new in replacements if r.shape == old.shape and np.allclose(r, old, **SAME_COMPUTATION)]
        out.append(found[0].astype(r.dtype) if found else r)
    return out


def remat_problems(remat_layer, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    depth = int(rng.integers(2, 7))
    v = rng.standard_normal(LESSON_WIDTH).astype(np.float32)
    sent = _exports("remat.remat_programs", "the network of remat_layer", remat_layer, [depth, 1], LESSON_WIDTH)
    networks = sent.get("networks") if type(sent) is dict else None
    if type(networks) is not list or len(networks) != 2 or not all(type(n) is dict for n in networks):
        raise CheckFailed("the network of remat_layer did not come back as JAX programs the grader can examine")
    layer_program, layer = _program(sent.get("layer"), _VECTOR, "remat_layer")
    _results(layer_program, "remat_layer", (LESSON_WIDTH,))
    forward, backward = _network_programs(networks[0], depth)
    forward_one, backward_one = _network_programs(networks[1], 1)

    # What each application of the layer receives and returns, computed here by the layer's program.
    activations = [v]
    for _ in range(depth):
        activations.append(layer(activations[-1])[0])
    value, *saved = forward(v)
    if not np.allclose(value, np.sum(activations[-1].astype(np.float64) ** 2), **SAME_COMPUTATION):
        return ["the network's forward pass computes another value than its layers do: "
                "remat_layer must compute the same thing every time it is called"]
    weight = lesson_weight()
    _, *saved_one = forward_one(v)
    if any(r.size > 1 and not any(_matches(r, c) for c in (weight, weight.T, *activations))
           for r in saved + saved_one):
        return ["autodiff saves values computed inside the layer (the product, the tanh's derivative...): "
                "a rematerialized layer saves only what each application receives and recomputes the rest"]
    if not all(any(_matches(r, h) for r in saved) for h in activations[:-1]) or not all(
            any(_matches(r, h) for r in saved_one) for h in activations[:2]):
        return ["autodiff does not save what each application of the layer receives, so it cannot recompute "
                "the layer from it: wrap the whole layer in jax.checkpoint"]

    one = np.float32(1.0)
    gradient = backward(*saved, one)[0]
    if _transcendentals(backward) < depth * LESSON_WIDTH:
        return ["the backward pass does not compute the layer's tanh again: a rematerialized layer "
                "recomputes its product and its tanh from its saved input (wrap the whole layer in jax.checkpoint)"]
    if not _is_the_gradient(gradient, layer, v, depth, activations, rng):
        return ["the backward pass of the rematerialized network does not compute the gradient of its layers"]
    # Each layer's backward pass is recomputed from the input it saved, by the same code for every
    # application: handed other inputs, the network's backward pass is the one-layer network's,
    # applied layer after layer from the last, at those inputs.
    inputs = rng.standard_normal((depth, LESSON_WIDTH)).astype(np.float32)
    output = rng.standard_normal(LESSON_WIDTH).astype(np.float32)
    moved = backward(*_replaced(saved, [*zip(activations[:-1], inputs), (activations[-1], output)]), one)[0]
    composed = 2 * output
    for received in inputs[::-1]:
        replaced = _replaced(saved_one, [(activations[0], received), (activations[1], composed / 2)])
        composed = backward_one(*replaced, one)[0]
    scale = float(np.max(np.abs(composed)))
    if not (np.isfinite(scale) and np.allclose(moved, composed, rtol=COMPOSED, atol=COMPOSED * scale)):
        return ["the backward pass does not recompute each layer from the input it saved: a rematerialized "
                "layer saves what it receives and computes the rest again (wrap the whole layer in jax.checkpoint)"]
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
    sent = _exports("remat.network_program", "remat_network and its gradient", remat_layer, LESSON_DEPTH,
                    LESSON_WIDTH)
    program, network = _program(sent, _VECTOR, "remat_network and its gradient")
    _results(program, "remat_network and its gradient", (), (LESSON_WIDTH,))
    for scale in (0.3, 1.0, 3.0):
        v = (scale * rng.standard_normal(LESSON_WIDTH)).astype(np.float32)
        value, gradient = network(v)
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
def autodiff_in(names) -> list[str]:
    """The autodiff transformations named in recorded name stacks."""
    found = set()
    for name in names:
        found.update(AUTODIFF_IN_NAME_STACK.findall(str(name)))
    return sorted(found)


def by_hand_problems(recurrence, rng: np.random.Generator | None = None) -> list[str]:
    rng = rng or np.random.default_rng()
    width, depth = int(rng.integers(6, 20)), int(rng.integers(2, 5))
    v = rng.standard_normal(width)
    weight = rng.standard_normal((width, width)) / math.sqrt(width)
    try:
        got = trusted.array(recurrence(v, weight, depth))
    except trusted.UntrustedResult as error:
        return [f"reverse_recurrence should return an array: {error}"]
    try:
        sent = remote.probe("remat.recurrence_program", recurrence, width, depth)
    except CheckFailed:
        raise
    except Exception:
        sent = None  # JAX cannot trace it: NumPy
    if sent is not None:
        # Every JAX operation it performs is in this program, each with the transformations it ran
        # under: autodiff leaves jvp(...) and transpose(...) in every operation it records.
        what = "reverse_recurrence"
        program, run = _program(sent, [([width], "float32"), ([width, width], "float32")], what)
        names = _LOCATION_NAME.findall(program.mlir_module())
        if not any(name.startswith("jit(") for name in names):
            return ["reverse_recurrence came back as a program without the name stacks JAX records"]
        used = autodiff_in(names)
        if used:
            return [f"the recurrence runs JAX's autodiff ({', '.join(used)} in the program JAX records): "
                    "write the backward pass by hand, without jax.grad, jax.vjp and friends"]
        results = run(v.astype(np.float32), weight.astype(np.float32))
        if len(results) != 1 or results[0].shape != got.shape or not _close(
                results[0], got.astype(np.float64), gradient_tolerance(depth)):
            return ["the program JAX records for reverse_recurrence computes something else than it returns"]
        return []
    # Nothing JAX can trace (NumPy): it must keep float64 inputs in float64.
    as_float32 = got.astype(np.float32).astype(got.dtype) if got.dtype.kind == "f" else got
    if got.dtype != np.float64 or np.array_equal(as_float32, got):
        return ["handed float64 NumPy arrays, the recurrence returned float32 values: a NumPy backward "
                "pass keeps float64 (JAX's autodiff here cannot); do not convert the inputs to float32"]
    return []


def check_recurrence_by_hand(recurrence, rng=None) -> None:
    problems = by_hand_problems(recurrence, rng)
    if problems:
        raise CheckFailed(problems[0])


# --- test_timing_verdict ----------------------------------------------------------------------
TIMING_VERDICTS = ("remat slower", "remat faster", "within the spread")

TIMING_HINTS = {
    "ordinary_median": "the median of the ordinary gradient's samples: the middle one once sorted, or the mean "
                       "of the two middle ones for an even count",
    "remat_median": "the median of the remat gradient's samples: the middle one once sorted, or the mean of the "
                    "two middle ones for an even count",
    "ordinary_middle_half": "the ordinary samples' middle half is [25th, 75th] percentile, as "
                            "np.percentile(samples, [25, 75]) computes them (NumPy's default, linear interpolation)",
    "remat_middle_half": "the remat samples' middle half is [25th, 75th] percentile, as "
                         "np.percentile(samples, [25, 75]) computes them (NumPy's default, linear interpolation)",
    "verdict": "the verdict is 'remat slower' only when the remat 25th percentile is strictly above the ordinary "
               "75th, 'remat faster' only when the remat 75th is strictly below the ordinary 25th, else 'within "
               "the spread' (middle halves that overlap or touch; the medians alone never decide it)",
}


def expected_timing_verdict(ordinary: list[float], rematerialized: list[float]) -> dict:
    """The lesson's Task 3, computed here: medians, middle halves, and the middle halves' verdict."""
    verdict = {halves.FASTER: "remat faster", halves.SLOWER: "remat slower",
               halves.WITHIN: "within the spread"}[halves.compare(rematerialized, ordinary)]
    return {"ordinary_median": float(np.median(ordinary)), "remat_median": float(np.median(rematerialized)),
            "ordinary_middle_half": list(halves.middle_half(ordinary)),
            "remat_middle_half": list(halves.middle_half(rematerialized)), "verdict": verdict}


def _draw(rng: np.random.Generator, centre: float, width: float, stall: bool = False) -> list[float]:
    """5 to 11 shuffled samples around `centre` (log-normal, relative width `width`); with `stall`,
    one of them 3 to 10 times slower: a busy moment, which moves a range and a mean, not a middle half."""
    values = centre * np.exp(width * rng.standard_normal(int(rng.integers(5, 12))))
    if stall:
        values[rng.integers(len(values))] *= rng.uniform(3, 10)
    return [float(v) for v in values]


# What each drawn case must show: (the remat samples' centre over the ordinary's, the two widths,
# whether an ordinary sample stalls, the verdict, and a test of the samples that makes the case
# decide the mistake it is there for).
def _median_past_quartile(o, r) -> bool:  # a median against the other's quartiles reads a change
    o_low, o_high = halves.middle_half(o)
    return not o_low <= float(np.median(r)) <= o_high


def _range_covers(o, r) -> bool:  # the old rule (medians apart by more than the wider range) reads none
    spread = max(max(o) - min(o), max(r) - min(r))
    return abs(float(np.median(r)) - float(np.median(o))) <= spread


def _means_differ(o, r) -> bool:  # means put in the medians' place move the medians by a lot
    return abs(float(np.mean(o)) - float(np.median(o))) > 0.01 * float(np.median(o))


TIMING_INTENTS = {
    "a clear slowdown": ((1.4, 2.5), (0.04, 0.04), False, "remat slower", None),
    "a clear speed-up": ((0.4, 0.7), (0.04, 0.04), False, "remat faster", None),
    "a slowdown with one slow ordinary call, which a full range would hide": (
        (1.15, 1.4), (0.03, 0.03), True, "remat slower", _range_covers),
    "remat's median above the ordinary middle half, the middle halves overlapping": (
        (1.12, 1.3), (0.3, 0.3), False, "within the spread", _median_past_quartile),
    "remat's median below the ordinary middle half, the middle halves overlapping": (
        (0.75, 0.9), (0.3, 0.3), False, "within the spread", _median_past_quartile),
    "overlapping middle halves with one slow ordinary call": (
        (0.97, 1.03), (0.15, 0.15), True, "within the spread", _means_differ),
}


def _intent_case(rng: np.random.Generator, scale: float, intent: str) -> tuple[list[float], list[float]]:
    (low, high), (o_width, r_width), stall, want, shows = TIMING_INTENTS[intent]
    for _ in range(1000):  # a bound: a case made impossible by a changed constant fails, never hangs
        ordinary = _draw(rng, scale, o_width, stall)
        rematerialized = _draw(rng, scale * rng.uniform(low, high), r_width)
        if (expected_timing_verdict(ordinary, rematerialized)["verdict"] == want
                and halves.margin(rematerialized, ordinary) > 1e-6
                and (shows is None or shows(ordinary, rematerialized))):
            return ordinary, rematerialized
    raise RuntimeError(f"no timings drawn that show {intent!r}")


def timing_cases(rng: np.random.Generator) -> list[tuple[str, list[float], list[float]]]:
    """(what, ordinary samples, remat samples), at a fresh scale, 5 to 11 samples each (odd and even
    counts), shuffled: each verdict, a slowdown one stall would hide in a full range, medians past
    the other's middle half whose middle halves still overlap, and middle halves that touch exactly
    (within the spread: the rule's comparisons are strict)."""
    scale = float(10 ** rng.uniform(-5, -1))  # seconds: tens of microseconds to a tenth of a second
    return [(what, *_intent_case(rng, scale, what)) for what in TIMING_INTENTS] + [
        ("middle halves that touch exactly", *halves.touching(rng))]


def timing_verdict_problems(compare_timings, rng: np.random.Generator | None = None) -> list[str]:
    from .roofline import key_problems  # the same comparison: numbers to 1e-9 relative, strings exactly

    rng = rng or np.random.default_rng()
    for what, ordinary, rematerialized in timing_cases(rng):
        got = call_student(f"compare_timings for {what}", compare_timings, list(ordinary), list(rematerialized))
        if not isinstance(got, dict):
            return [f"compare_timings should return a dict, got {type(got).__name__} ({what})"]
        problems = key_problems(got, expected_timing_verdict(ordinary, rematerialized), TIMING_HINTS, what)
        if problems:
            return problems
    return []


def check_timing_verdict(compare_timings, rng=None) -> None:
    problems = timing_verdict_problems(compare_timings, rng)
    if problems:
        raise CheckFailed("; ".join(problems))
