# Counts every jax.monitoring duration event as a compile: tracing, lowering and compiling all
# record events, several per trace, so the count is far too high. Listening is right; the event
# must be the compile event.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# tier: nightly
# %% solutions
# %% replace count_traces_and_compiles
def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    events = []
    listener = lambda event, duration_secs, **details: events.append(event)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        for args, kwargs in calls:
            jitted(*args, **kwargs)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return {"traces": counter["traces"], "compiles": len(events)}
