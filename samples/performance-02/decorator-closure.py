# Other correct idioms. counted_jit applies jax.jit as a decorator through
# functools.partial(jax.jit, **jit_kwargs), stacked on functools.wraps, and bumps the counter
# through a bound method kept in a closure. count_traces keeps its count in a nonlocal int and
# jits its fresh wrapper after writing it, under the same name. count_traces_and_compiles counts
# compiles in a context manager that registers its listener on entry and removes it on exit.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% replace counted_jit
def counted_jit(fn, **jit_kwargs):
    counter = {"traces": 0}
    bump = counter.update

    @functools.partial(jax.jit, **jit_kwargs)
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        bump(traces=counter["traces"] + 1)
        return fn(*args, **kwargs)

    return traced, counter
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    traces = 0

    def body(*args, **kwargs):
        nonlocal traces
        traces += 1
        return fn(*args, **kwargs)

    body = jax.jit(functools.wraps(fn)(body), **jit_kwargs)
    for args, kwargs in calls:
        body(*args, **kwargs)
    return traces
# %% replace count_traces_and_compiles
import contextlib


@contextlib.contextmanager
def counting_compiles():
    seen = {"compiles": 0}

    def listener(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            seen["compiles"] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    with counting_compiles() as seen:
        for args, kwargs in calls:
            jitted(*args, **kwargs)
    return {"traces": counter["traces"], **seen}
