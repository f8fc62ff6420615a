# Looks like a structured loop, but functools.reduce iterates over xs in Python while JAX
# traces: the jaxpr still holds one copy of the step per iteration. The result is right,
# so it loses the size points only.
# expect: test_scanned_result=3 test_scanned_size=0 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
import functools


def scanned(h, xs, a):
    return functools.reduce(lambda state, x: jnp.tanh(a * state + x), xs, h)
