# Correct in other idioms: estimates_from asks forgiveness (KeyError, TypeError, AttributeError, the
# exception types backends raise) instead of checking first; read_program lowers in one step and
# takes the jaxpr of the jitted function (an outer jit equation, the same in and out shapes); the
# hand count is a product of factors. Full marks.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% replace estimates
def estimates_from(compiled):
    found, missing = {}, {}
    try:
        costs = compiled.cost_analysis()
    except (NotImplementedError, RuntimeError) as error:
        costs = error
    if isinstance(costs, list):
        costs = costs[0] if costs else "an empty list"
    for name, key in COST_KEYS.items():
        try:
            found[name] = costs[key]
        except (KeyError, TypeError, IndexError):
            found[name] = None
        if found[name] is None:
            missing[name] = f"cost_analysis() gave no {key!r}: {costs!r}"
    try:
        memory = compiled.memory_analysis()
    except RuntimeError as error:
        memory = error
    for name, attribute in MEMORY_FIELDS.items():
        try:
            found[name] = getattr(memory, attribute)
        except AttributeError:
            found[name] = None
            missing[name] = f"memory_analysis() has no {attribute}: {memory!r}"
    found["missing"] = missing
    return found
# %% replace read_program
import functools


def read_program(fn, *args):
    jitted = functools.partial(jax.jit)(fn)
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    return {
        "jaxpr": jax.make_jaxpr(jitted)(*args),
        "lowered": lowered,
        "stablehlo": lowered.as_text(),
        "compiled": compiled,
        "estimates": estimates_from(compiled),
    }
# %% replace hand_count
import math


def matmul_flops(m, k, n):
    return math.prod((2, m, k, n))
