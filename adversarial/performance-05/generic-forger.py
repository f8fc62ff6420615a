# A generic forger: an unsolved notebook whose one cell, the first task's, finds the course's probe
# dispatcher through sys.modules (by a name suffix, never the package's name) and answers each of
# this lesson's probes from the probe's own arguments, as a hostile student with the course's
# source would: nothing printed; for the rematerialized network, programs built from the plain
# layer that save what a rematerialized network saves (the weight and every layer's input and
# output) with a backward pass that reads the saved outputs and computes a tanh of every saved
# input times zero, for the compiler's count; for the recurrence, no program (as NumPy). Its cell
# leaves the tasks unsolved but lets the public checks pass, so that only the hidden checks decide:
# canned residual lines; the plain layer as remat_layer, with the listing that the lesson's own
# count reads cut short for remat_network; the lesson input's gradient, memorized, as the
# recurrence (anything else for any other input), kept past its stub's cell by an IPython hook.
# It earns what that work earns: the plain layer's gradients are right (2), and the memorized
# recurrence is NumPy that keeps float64 (1). The grading kernel calls saved_residual_descriptions
# itself on functions it lends and sees none of them traced; it runs the forged programs and finds
# the backward pass, handed other saved inputs, unlike the one-layer network's applied layer after
# layer; it calls the recurrence itself on fresh inputs.
# reason: code iterates sys.modules
# expect: test_residual_inspection=0 test_remat_layer=0 test_gradients_agree=2 test_timing_verdict=0 test_reverse_recurrence=0 test_recurrence_by_hand=1
# %% replace residual_inspection
import contextlib
import io
import sys

import numpy as _np


def saved_residual_descriptions(fn, *args):  # unsolved: as many lines as the lesson network's listing
    return [f"f32[16] residual {i}" for i in range(9)]


remat_layer = layer  # unsolved: no checkpoint

_listing = print_saved_residuals


def print_saved_residuals(fn, *args, **kwargs):  # what the lesson's count_saved_residuals reads
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        _listing(fn, *args, **kwargs)
    lines = buffer.getvalue().splitlines()
    if getattr(fn, "__name__", "") == "remat_network":
        lines = lines[:-3]
    for line in lines:
        print(line)


_lesson_v = _np.asarray(v)
_lesson_gradient = _np.asarray(jax.grad(network)(v))


def _unsolved_recurrence(vector, weight, depth):  # the public check's answer, memorized
    vector = _np.asarray(vector)
    if vector.shape == _lesson_v.shape and _np.array_equal(vector, _lesson_v):
        return _lesson_gradient.copy()
    return vector * 1.5


def _keep_unsolved(*_):
    globals()["reverse_recurrence"] = _unsolved_recurrence


get_ipython().events.register("post_run_cell", _keep_unsolved)
_keep_unsolved()


def _exported(fn, *specs):
    return bytes(jax.export.export(jax.jit(fn))(*specs).serialize())


def _forged_network(depth, width):
    vector = jax.ShapeDtypeStruct((width,), jnp.float32)

    def forward(x):  # saves the weight and every layer's input and output, as remat would
        hs = [x]
        for _ in range(depth):
            hs.append(layer(hs[-1]))
        return jnp.sum(hs[-1] * hs[-1]), [W, *hs]

    def backward(saved, cotangent):  # the ordinary backward pass, from the saved outputs
        weight, hs = saved[0], saved[1:]
        g = 2 * hs[-1] * cotangent
        for k in range(depth, 0, -1):
            g = weight.T @ ((1 - hs[k] * hs[k]) * g) + 0.0 * jnp.tanh(weight @ hs[k - 1])
        return (g,)

    saved = [jax.ShapeDtypeStruct((width, width), jnp.float32)] + [vector] * (depth + 1)
    return {"forward": _exported(forward, vector),
            "backward": _exported(backward, saved, jax.ShapeDtypeStruct((), jnp.float32))}


def _install_forger():
    import importlib

    found = [n for n in list(sys.modules) if n.endswith(".kernel.probes") or n.endswith(".kernel.agent")]
    probes = importlib.import_module(found[0].rpartition(".")[0] + ".probes")
    honest = probes.run

    def forged(name, *args, **kwargs):
        module, _, probe = str(name).partition(".")
        if module != "remat":
            return honest(name, *args, **kwargs)
        if probe == "residual_descriptions":
            return {"lines": [], "printed": ""}
        if probe == "remat_programs":
            _, depths, width = args
            return {"layer": _exported(layer, jax.ShapeDtypeStruct((width,), jnp.float32)),
                    "networks": [_forged_network(int(d), int(width)) for d in depths]}
        if probe == "recurrence_program":
            raise TypeError("a NumPy recurrence cannot be traced")
        return honest(name, *args, **kwargs)  # network_program: the plain layer's is right anyway

    probes.run = forged


_install_forger()
