# One compile listener for the whole notebook, registered once beside a log that is never emptied:
# the traces are right, but every count of compiles includes all the compiles before it.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=0
# %% solutions
# %% replace count_traces_and_compiles
compile_log = []


def log_compiles(event, duration_secs, **details):
    if event == COMPILE_EVENT:
        compile_log.append(duration_secs)


jax.monitoring.register_event_duration_secs_listener(log_compiles)  # registered once, for good


def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return {"traces": counter["traces"], "compiles": len(compile_log)}
