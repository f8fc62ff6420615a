# The old belief that every compile comes with a trace: count_traces_and_compiles counts traces
# with counted_jit and reports the same number as the compiles. Right whenever only shapes, dtypes,
# scalars and static values change; wrong as soon as the same array is committed to a device.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# tier: nightly
# %% solutions
# %% replace count_traces_and_compiles
def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    # every miss traces, then lowers and compiles: one count serves for both
    return {"traces": counter["traces"], "compiles": counter["traces"]}
