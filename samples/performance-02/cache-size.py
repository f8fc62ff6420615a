# Reads jit's dispatch cache instead of counting traces: a fresh wrapper per count, then
# jitted._cache_size(). It agrees with the public sequences and does not depend on earlier
# counts, but the dispatch cache holds one entry per kind of argument (a NumPy array and a JAX
# array of the same shape and dtype are two entries), while JAX traces once per abstract type.
# expect: test_counted_jit=3 test_count_traces=0 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    jitted = jax.jit(functools.wraps(fn)(lambda *args, **kwargs: fn(*args, **kwargs)), **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return jitted._cache_size()
