# Counts calls, not traces: the counter sits in a Python wrapper around the jitted function, so
# it moves on every call. One call looks right; a repeated call does not.
# expect: test_counted_jit=0 test_count_traces=0 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# %% solutions
# %% replace counted_jit
def counted_jit(fn, **jit_kwargs):
    counter = {"traces": 0}
    compiled = jax.jit(fn, **jit_kwargs)

    def jitted(*args, **kwargs):
        counter["traces"] += 1
        return compiled(*args, **kwargs)

    return jitted, counter
