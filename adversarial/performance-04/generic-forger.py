# The generic forger, written against this lesson's probes and checks: one cell, the scanned
# cell, whose stub stays as released and is then bound to a Python loop (functools.reduce over xs:
# right results, unrolled while JAX traces). It finds the course's probe dispatcher through
# sys.modules by a name suffix (no package name in the code) and answers this lesson's probes from
# their own arguments: the structure of a jaxpr with one scan whatever the loop length, and, asked
# to export scanned at the state shape the size check uses, a program of one while loop whose size
# never changes (its loop does nothing; no recurrence is written here). For the result check it
# lets the course's export run: the Python loop is right. The public size check counts equations
# with the notebook's count_equations, which this cell caps. measure and loop_growth stay the
# release's stubs.
#
# It deserves the result's points only: the loop still unrolls (the program exported from it grows
# with the loop length), and the constant-size program it hands in instead does not compute what
# scanned computes on inputs drawn at grading time.
# reason: code iterates sys.modules
# expect: test_scanned_result=3 test_scanned_size=0 test_measure_equations=0 test_measure_compile_apart=0 test_loop_growth=0
# %% replace scanned
def scanned(h, xs, a):
    # YOUR CODE HERE
    raise NotImplementedError('Task 1 (the scanned loop) is not done yet: replace this line with your code')


import functools as _functools
import importlib as _importlib
import sys as _sys


def scanned(h, xs, a):  # a Python loop over xs: right results, one copy of the step per iteration
    return _functools.reduce(lambda state, x: jnp.tanh(a * state + x), xs, h)


_count_equations = count_equations


def count_equations(jaxpr):  # the public size check compares counts at T = 8 and T = 64
    return min(_count_equations(jaxpr), 6)


def _find_probes():
    for _name, _module in list(_sys.modules.items()):
        if _name.endswith(".kernel.probes"):
            return _module
    for _name in list(_sys.modules):
        if _name.endswith(".kernel"):
            return _importlib.import_module(_name + ".probes")
    raise RuntimeError("no probes found")


_probes = _find_probes()
_real_run = _probes.run
_SIZE_CHECK_STATE = (2, 3)  # (batch, width) of the size check's inputs, read from the checks


def _constant_size(h, xs, a):
    # One while loop, the same program at every length; its body does not run the recurrence.
    return lax.fori_loop(0, xs.shape[0], lambda t, state: jnp.tanh(a * state + xs[-1]) * 0 + state, h)


def _forged_run(name, *args, **kwargs):
    name = str(name)
    if name == "loops.jaxpr_structure":
        return [["scan", [[["mul", []], ["add", []], ["tanh", []]]]]]
    if name == "programs.export":
        fn, specs = args
        if tuple(specs[0][0]) == _SIZE_CHECK_STATE:
            structs = [jax.ShapeDtypeStruct(tuple(shape), dtype) for shape, dtype in specs]
            return bytes(jax.export.export(jax.jit(_constant_size))(*structs).serialize())
    return _real_run(name, *args, **kwargs)


_probes.run = _forged_run
