"""performance-05's probes: what only the student's process can build, for inputs the trusted side picks.

Functions handed to the student's code must be traceable by the student's JAX, and a function
defined on the trusted side is not (tracers do not cross the channel). So every function the
checks need is built here, from a plain description (`build`), by code the trusted kernel runs
too: for the same description both sides build the same function, at the same source lines, and
the trusted side computes its own reference with its own JAX.

Each probe returns values only: lists of strings, arrays, and jaxprs flattened to tuples of
primitive names and parameter names. `perfcourse.checks.remat` judges them.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np

PROBES = ("residual_descriptions", "remat_report", "value_and_gradient", "recurrence_program")

# Elementwise functions a description may chain (each has a derivative that saves residuals).
UNARY = ("sin", "cos", "tanh", "exp", "sinh", "arctan")


def build(spec: dict):
    """The function a description names; the trusted side calls this too, for its reference.

    {"kind": "chain", "ops": [...]}              x -> sum(op_n(...op_1(x)))
    {"kind": "pair", "ops": [...]}               x, y -> sum(chain(x) * exp(y))
    {"kind": "layers", "depth": d, "weight": W}  v -> sum(h * h), h = tanh(W @ ...tanh(W @ v))
    """
    import jax.numpy as jnp

    kind = spec["kind"]
    if kind == "layers":
        weight = jnp.asarray(np.asarray(spec["weight"], np.float32))
        depth = int(spec["depth"])

        def layers(v):
            for _ in range(depth):
                v = jnp.tanh(weight @ v)
            return jnp.sum(v * v)
        return layers

    ops = [getattr(jnp, name) for name in spec["ops"] if name in UNARY]
    if len(ops) != len(spec["ops"]):
        raise ValueError("unknown elementwise function in a description")

    def chain(x):
        for op in ops:
            x = op(x)
        return x

    if kind == "chain":
        def chained(x):
            return jnp.sum(chain(x))
        return chained
    if kind == "pair":
        def pair(x, y):
            return jnp.sum(chain(x) * jnp.exp(y))
        return pair
    raise ValueError(f"unknown kind of function {str(kind)[:40]!r}")


def network_of(apply_layer, depth: int):
    """`depth` applications of `apply_layer`, then the squared length: the lesson's network."""
    import jax.numpy as jnp

    def network(v):
        for _ in range(depth):
            v = apply_layer(v)
        return jnp.sum(v * v)
    return network


def residual_descriptions(describe, spec: dict, *arrays):
    """The student's `describe(fn, *args)` on a function built here; and what it printed meanwhile."""
    import jax.numpy as jnp

    fn = build(spec)
    args = [jnp.asarray(a) for a in arrays]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        lines = describe(fn, *args)
    return {"lines": lines, "printed": printed.getvalue()}


def _sub_jaxprs(eqn):
    def found(value):
        if hasattr(value, "eqns"):
            yield value
        elif hasattr(getattr(value, "jaxpr", None), "eqns"):
            yield value.jaxpr
        elif isinstance(value, (tuple, list)):
            for item in value:
                yield from found(item)
    for value in eqn.params.values():
        yield from found(value)


def flatten(jaxpr) -> list:
    """Every equation, nested ones included: (index, parent index or -1, primitive, param names, name stack)."""
    rows: list = []

    def walk(inner, parent):
        for eqn in inner.eqns:
            index = len(rows)
            rows.append((index, parent, eqn.primitive.name, tuple(sorted(map(str, eqn.params))),
                         str(getattr(eqn.source_info, "name_stack", ""))))
            for sub in _sub_jaxprs(eqn):
                walk(sub, index)
    walk(jaxpr, -1)
    return rows


def remat_report(apply_layer, v, depth: int):
    """The network of `depth` applications of the student's layer at `v`: its jaxpr, what each
    application returns, and the values reverse-mode autodiff keeps for the backward pass."""
    import jax
    import jax.numpy as jnp

    start = jnp.asarray(v)
    fn = network_of(apply_layer, depth)
    activations = [start]
    for _ in range(depth):
        activations.append(apply_layer(activations[-1]))
    program = jax.make_jaxpr(fn)(start)
    _, pullback = jax.vjp(fn, start)
    residuals = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(pullback) if hasattr(leaf, "shape")]
    return {"equations": flatten(program.jaxpr), "activations": [np.asarray(a) for a in activations],
            "residuals": residuals}


def value_and_gradient(apply_layer, v, depth: int):
    """The network of the student's layer at `v`: its value and jax.grad's gradient."""
    import jax
    import jax.numpy as jnp

    value, gradient = jax.value_and_grad(network_of(apply_layer, depth))(jnp.asarray(v))
    return {"value": np.asarray(value), "gradient": np.asarray(gradient)}


def recurrence_program(recurrence, v, weight, depth: int):
    """What JAX records while the student's recurrence runs on concrete NumPy arrays.

    Under `jax.make_jaxpr` every JAX operation is recorded, on constants too, and autodiff leaves
    its transformations (jvp, transpose) in each recorded equation's name stack; NumPy arithmetic
    records nothing. A recurrence that turns a recorded value back into NumPy cannot be traced.
    """
    import jax

    try:
        program = jax.make_jaxpr(lambda: recurrence(v, weight, depth))()
    except Exception as exc:  # noqa: BLE001 - the trusted side only needs to know it did not trace
        return {"traced": False, "error": type(exc).__name__}
    return {"traced": True, "equations": flatten(program.jaxpr)}
