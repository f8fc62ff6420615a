# A student's own idioms: the wrapper given fn's signature through __signature__ (no functools.wraps), the calls
# unpacked in the loop header, the compiles kept as a list of durations whose length is the count.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% replace counted_jit
import inspect


def counted_jit(fn, **jit_kwargs):
    counter = {"traces": 0}

    def traced_once_per_trace(*args, **kwargs):
        counter["traces"] += 1  # a Python side effect: it runs only while JAX traces
        return fn(*args, **kwargs)

    traced_once_per_trace.__signature__ = inspect.signature(fn)  # static_argnames map to fn's positions
    return jax.jit(traced_once_per_trace, **jit_kwargs), counter
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)  # a new function object: JAX has never traced it
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return int(counter["traces"])
# %% replace count_traces_and_compiles
def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    durations = []

    def compiles_only(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            durations.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(compiles_only)
    try:
        for args, kwargs in calls:
            jax.block_until_ready(jitted(*args, **kwargs))
    finally:
        jax.monitoring.unregister_event_duration_listener(compiles_only)
    return {"traces": counter["traces"], "compiles": len(durations)}
