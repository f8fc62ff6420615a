# Another correct count_traces: a fresh lambda per count (no functools.wraps: static arguments
# arrive by keyword), a closure list that grows by one entry per trace, results waited for, and
# JAX's caches cleared first for good measure. counted_jit is the lesson's.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    jax.clear_caches()
    traced = []
    jitted = jax.jit(lambda *args, **kwargs: traced.append(1) or fn(*args, **kwargs), **jit_kwargs)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    return len(traced)
