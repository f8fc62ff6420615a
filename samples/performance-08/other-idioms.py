# Still other idioms: axes given as tuples (P(("data",), None)), shardings built in a loop, a
# regular expression over the whole text, a nonlocal counter, perf_counter_ns and
# block_until_ready on every leaf. Full marks.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_compile_key=2 test_timer=2
# %% solutions
# %% replace data_parallel
def data_parallel(mesh):
    specs = {"w": P(), "x": P(("data",), None), "y": P(("data",), None)}
    return {name: jax.sharding.NamedSharding(mesh, spec) for name, spec in specs.items()}
# %% replace collectives
def collectives(hlo_text):
    import collections
    import re

    kinds = "|".join(re.escape(k) for k in COLLECTIVE_KINDS)
    found = re.findall(r"^\s*(?:ROOT\s+)?\S+\s*=\s*.*?\s(" + kinds + r")(?:-start)?\(", hlo_text, flags=re.M)
    return dict(collections.Counter(found))
# %% replace weights_split
def weights_split(mesh):
    specs = {"w": P(None, ("model",)), "x": P(("data",), None), "y": P(("data",), ("model",))}
    return {name: jax.sharding.NamedSharding(mesh, spec) for name, spec in specs.items()}
# %% replace compiles_per_call
def compiles_per_call(fn, calls):
    total = 0

    def listen(event, duration_secs, **details):
        nonlocal total
        total += event == COMPILE_EVENT

    out = []
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        for args in calls:
            before = total
            jax.tree.map(lambda leaf: leaf.block_until_ready(), fn(*args))
            out.append(total - before)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return out
# %% replace time_step
def time_step(fn, *args, repeats=5):
    import time

    def once():
        start = time.perf_counter_ns()
        jax.tree.map(lambda leaf: leaf.block_until_ready(), fn(*args))
        return (time.perf_counter_ns() - start) / 1e9

    first = once()
    return first, [once() for _ in range(repeats)]
