# Counts each call's compiles right, but unregisters its listener after the loop instead of in a
# `finally:` block: when a call raises, the listener stays registered and goes on counting every
# compile of the process. The lesson asks for a listener "always unregistered": loses the
# compile-key points only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=0 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace compiles_per_call
def compiles_per_call(fn, calls):
    events = []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            events.append(duration_secs)

    counts = []
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    for args in calls:
        before = len(events)
        jax.block_until_ready(fn(*args))
        counts.append(len(events) - before)
    jax.monitoring.unregister_event_duration_listener(on_duration)
    return counts
