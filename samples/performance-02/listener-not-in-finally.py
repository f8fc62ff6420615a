# Counts traces and compiles right, but removes its compile listener after the loop instead of in
# a `finally:` block: when a call raises, the listener stays registered and counts the compiles
# of everything after it. The lesson asks for `finally:`: loses the traces-and-compiles points only.
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
    jax.monitoring.unregister_event_duration_listener(on_duration)
    return {"traces": counter["traces"], "compiles": len(compiles)}
