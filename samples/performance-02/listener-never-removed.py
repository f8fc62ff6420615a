# Counts traces and compiles right, from a listener registered for each count, but never removes
# it: every count leaves one more listener behind in the process. Loses the traces-and-compiles
# points only.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# tier: nightly
# %% solutions
# %% replace count_traces_and_compiles
def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    compiles = []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            compiles.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    return {"traces": counter["traces"], "compiles": len(compiles)}
