# A different correct approach. counted_jit binds a module-level counting helper with
# functools.partial instead of writing a wrapper with functools.wraps (static arguments still
# work: they are passed by keyword). count_traces does not use counted_jit: it logs the abstract
# signature of every trace and returns the length of the log.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2
# %% replace counted_jit
def _count_then_call(fn, counter, *args, **kwargs):
    counter["traces"] = counter["traces"] + 1
    return fn(*args, **kwargs)


def counted_jit(fn, **jit_kwargs):
    counter = dict(traces=0)
    return jax.jit(functools.partial(_count_then_call, fn, counter), **jit_kwargs), counter
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    signatures = []

    def logged(*args, **kwargs):
        signatures.append(jax.tree_util.tree_map(lambda leaf: str(getattr(leaf, "aval", leaf)), (args, kwargs)))
        return fn(*args, **kwargs)

    jitted = jax.jit(logged, **jit_kwargs)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    return len(signatures)
