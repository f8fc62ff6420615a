# Reports the compiles so far after each call instead of each call's own: [1, 1, 2, 2, ...].
# Loses the compile-key cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=0 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace compiles_per_call
def compiles_per_call(fn, calls):
    events, counts = [], []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            events.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        for args in calls:
            jax.block_until_ready(fn(*args))
            counts.append(len(events))
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return counts
