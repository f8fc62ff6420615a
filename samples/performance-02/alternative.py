# A different correct approach. counted_jit binds a module-level counting helper with
# functools.partial instead of writing a wrapper with functools.wraps (static arguments still
# work: they are passed by keyword). count_traces does not use counted_jit: it logs the abstract
# signature of every trace and returns the length of the log. count_traces_and_compiles uses
# neither: a fresh lambda appends to a list while it is traced, and a callable object registered
# as a time-span listener (not a duration listener) keeps the compile events, matched by the end
# of their name.
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# %% replace counted_jit
def _count_then_call(fn, counter, *args, **kwargs):
    counter["traces"] = counter["traces"] + 1
    return fn(*args, **kwargs)


def counted_jit(fn, **jit_kwargs):
    counter = dict(traces=0)
    return jax.jit(functools.partial(_count_then_call, fn, counter), **jit_kwargs), counter
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    signatures = []

    def logged(*args, **kwargs):
        signatures.append(jax.tree_util.tree_map(lambda leaf: str(getattr(leaf, "aval", leaf)), (args, kwargs)))
        return fn(*args, **kwargs)

    jitted = jax.jit(logged, **jit_kwargs)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    return len(signatures)
# %% replace count_traces_and_compiles
class CompileTally:
    "A jax.monitoring time-span listener: keeps the span of every compile event."

    def __init__(self):
        self.spans = []

    def __call__(self, event, start_time, end_time, **details):
        if event.endswith("backend_compile_duration"):
            self.spans.append(end_time - start_time)


def count_traces_and_compiles(fn, calls, **jit_kwargs):
    traced = []
    jitted = jax.jit(lambda *args, **kwargs: traced.append(1) or fn(*args, **kwargs), **jit_kwargs)
    tally = CompileTally()
    jax.monitoring.register_event_time_span_listener(tally)
    try:
        for args, kwargs in calls:
            jitted(*args, **kwargs)
    finally:
        jax.monitoring.unregister_event_time_span_listener(tally)
    return dict(traces=len(traced), compiles=len(tally.spans))
