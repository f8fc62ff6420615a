"""Grade rematerialization by the program JAX builds and by independent arithmetic, never by text.

What these helpers look at, and why it is stable across JAX versions:

- the jaxpr's structure: the checkpoint equation is found by its parameters (a sub-jaxpr with a
  saving `policy` and a `prevent_cse` guard) or by one of the names its primitive has had
  ("remat2", "checkpoint", "remat"), never by printed text;
- the NUMBER of residuals `jax.ad_checkpoint.print_saved_residuals` lists, one line each,
  never their wording, which changes between versions;
- gradients computed here in float64 NumPy by forward-mode Jacobian accumulation: arithmetic
  that shares no code, and not even the direction of the recurrence, with what it checks.
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

import numpy as np

REMAT_NAMES = frozenset({"checkpoint", "remat", "remat2"})
REMAT_PARAMS = frozenset({"policy", "prevent_cse"})

# Public ways into JAX's autodiff. A hand-written reverse recurrence calls none of them.
AUTODIFF_ENTRY_POINTS = ("grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
                         "jacobian", "hessian", "linear_transpose")


def _jaxprs_in(value):
    if hasattr(value, "eqns"):  # a Jaxpr
        yield value
    elif hasattr(getattr(value, "jaxpr", None), "eqns"):  # a ClosedJaxpr
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _jaxprs_in(item)


def sub_jaxprs(eqn):
    """The jaxprs an equation carries in its parameters (jit, scan, cond, checkpoint...)."""
    for value in eqn.params.values():
        yield from _jaxprs_in(value)


def is_remat(eqn) -> bool:
    """A checkpoint equation, whatever this JAX version calls its primitive."""
    has_body = any(True for _ in sub_jaxprs(eqn))
    return has_body and (eqn.primitive.name in REMAT_NAMES or REMAT_PARAMS <= set(eqn.params))


def _contains(jaxpr, primitive: str) -> bool:
    return any(e.primitive.name == primitive or any(_contains(j, primitive) for j in sub_jaxprs(e))
               for e in jaxpr.eqns)


@dataclass
class RematStructure:
    wrapped: int   # outermost checkpoint equations that contain the primitive
    exposed: int   # applications of the primitive outside every checkpoint


def remat_structure(fn, *args, primitive: str = "tanh") -> RematStructure:
    """How the applications of `primitive` in `fn`'s jaxpr sit with respect to checkpoints."""
    import jax

    found = RematStructure(0, 0)

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if is_remat(eqn):
                found.wrapped += any(_contains(j, primitive) for j in sub_jaxprs(eqn))
                continue
            found.exposed += eqn.primitive.name == primitive
            for inner in sub_jaxprs(eqn):
                walk(inner)

    walk(jax.make_jaxpr(fn)(*args).jaxpr)
    return found


def residual_count(fn, *args) -> int:
    """How many residuals reverse-mode autodiff of `fn` saves: the lines JAX prints, counted."""
    import jax.ad_checkpoint

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        jax.ad_checkpoint.print_saved_residuals(fn, *args)
    return len([line for line in buffer.getvalue().splitlines() if line.strip()])


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


def fresh_problem(rng: np.random.Generator, width: int):
    """A random float32 vector and a weight scaled so tanh is not saturated."""
    v = rng.standard_normal(width).astype(np.float32)
    weight = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
    return v, weight


@contextlib.contextmanager
def autodiff_recorded(*namespaces: dict):
    """Record every call of JAX's public autodiff entry points made while the block runs.

    Replaces them on the `jax` module and wherever a namespace (the student's globals) binds
    one by name (`from jax import grad`); each replacement records the call and then raises.
    Yields the list of recorded names; everything is put back afterwards.
    """
    import jax

    calls: list[str] = []
    originals = {name: getattr(jax, name) for name in AUTODIFF_ENTRY_POINTS if hasattr(jax, name)}

    def forbidden(name):
        def replacement(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"the reverse recurrence called jax.{name}: write the backward "
                                 "pass by hand, without JAX's autodiff")
        return replacement

    replacements = {name: forbidden(name) for name in originals}
    undo = []
    try:
        for name, replacement in replacements.items():
            undo.append((jax, name, originals[name]))
            setattr(jax, name, replacement)
        by_identity = {id(fn): name for name, fn in originals.items()}
        for namespace in namespaces:
            for key, value in list(namespace.items()):
                name = by_identity.get(id(value))
                if name is not None and value is originals[name]:
                    undo.append((namespace, key, value))
                    namespace[key] = replacements[name]
        yield calls
    finally:
        for owner, key, value in reversed(undo):
            if isinstance(owner, dict):
                owner[key] = value
            else:
                setattr(owner, key, value)
