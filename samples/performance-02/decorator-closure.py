# Other correct idioms. counted_jit applies jax.jit as a decorator through
# functools.partial(jax.jit, **jit_kwargs), stacked on functools.wraps, and bumps the counter
# through a bound method kept in a closure. count_traces keeps its count in a nonlocal int and
# jits its fresh wrapper after writing it, under the same name.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2
# %% replace counted_jit
def counted_jit(fn, **jit_kwargs):
    counter = {"traces": 0}
    bump = counter.update

    @functools.partial(jax.jit, **jit_kwargs)
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        bump(traces=counter["traces"] + 1)
        return fn(*args, **kwargs)

    return traced, counter
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    traces = 0

    def body(*args, **kwargs):
        nonlocal traces
        traces += 1
        return fn(*args, **kwargs)

    body = jax.jit(functools.wraps(fn)(body), **jit_kwargs)
    for args, kwargs in calls:
        body(*args, **kwargs)
    return traces
