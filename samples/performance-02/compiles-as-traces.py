# Counts compiles as traces: the compile events are counted correctly, from zero, around the calls,
# and the same number is reported as the traces. Right until a call compiles without tracing.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# tier: nightly
# %% solutions
# %% replace count_traces_and_compiles
def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, _ = counted_jit(fn, **jit_kwargs)
    compiles = []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            compiles.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        for args, kwargs in calls:
            jax.block_until_ready(jitted(*args, **kwargs))
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return {"traces": len(compiles), "compiles": len(compiles)}  # a compile per trace, surely
