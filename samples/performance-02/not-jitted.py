# The counter is inside the function, but the function is never jitted: its body runs on every
# call, so the counter counts calls. Nothing is traced or compiled.
# expect: test_counted_jit=0 test_count_traces=0 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# tier: nightly
# %% solutions
# %% replace counted_jit
def counted_jit(fn, **jit_kwargs):
    counter = {"traces": 0}

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        counter["traces"] += 1
        return fn(*args, **kwargs)

    return counted, counter
