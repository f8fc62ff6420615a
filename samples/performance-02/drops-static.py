# counted_jit forgets to pass jax.jit's keyword arguments on: static_argnames is dropped, so a
# static argument is traced like any other and a function that needs its value fails.
# expect: test_counted_jit=0 test_count_traces=0 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# tier: nightly
# %% solutions
# %% replace counted_jit
def counted_jit(fn, **jit_kwargs):
    counter = {"traces": 0}

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        counter["traces"] += 1
        return fn(*args, **kwargs)

    return jax.jit(traced), counter
