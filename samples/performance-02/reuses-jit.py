# Keeps one counted function per fn, to save compiling, and resets its counter before each
# count. The counter starts at zero but JAX's cache does not: whatever an earlier count compiled
# is a hit now, so later counts come out too low.
# expect: test_counted_jit=3 test_count_traces=0 test_count_traces_isolated=0 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
counted_functions = {}


def count_traces(fn, calls, **jit_kwargs):
    key = (fn, tuple(sorted(jit_kwargs.items())))
    if key not in counted_functions:
        counted_functions[key] = counted_jit(fn, **jit_kwargs)
    jitted, counter = counted_functions[key]
    counter["traces"] = 0
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]
