# count_traces keeps one running total for the whole notebook: its first count is right, every
# later one includes all the counts before it.
# expect: test_counted_jit=3 test_count_traces=0 test_count_traces_isolated=0 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
total = {"traces": 0}


def count_traces(fn, calls, **jit_kwargs):
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        total["traces"] += 1
        return fn(*args, **kwargs)

    jitted = jax.jit(traced, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return total["traces"]
