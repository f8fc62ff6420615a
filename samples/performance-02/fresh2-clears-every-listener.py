# Removes its listener with jax.monitoring.clear_event_listeners(): every listener of the process goes with
# it, other code's too (the text: remove the listener with unregister_event_duration_listener).
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# tier: nightly
# %% solutions
# %% replace count_traces_and_compiles
def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    compiles = {"n": 0}

    def listener(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            compiles["n"] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        for args, kwargs in calls:
            jax.block_until_ready(jitted(*args, **kwargs))
    finally:
        jax.monitoring.clear_event_listeners()
    return {"traces": counter["traces"], "compiles": compiles["n"]}
