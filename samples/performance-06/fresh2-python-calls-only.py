# Looks for waits among the Python tracer's calls only ('$file:line function'): a block_until_ready seen by
# the runtime as CommonPjRtBuffer::Await, or JAX's np.asarray(jax.Array) annotation, is missed.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=0 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace find_syncs
def find_syncs(trace, scope):
    steps = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == scope),
                   key=lambda e: e["ts"])
    if not steps:
        return []
    thread = (steps[0]["pid"], steps[0]["tid"])
    bounds = [(s["ts"], n["ts"]) for s, n in zip(steps, steps[1:])] + [(steps[-1]["ts"], steps[-1]["ts"] + steps[-1]["dur"])]
    waited = set()
    for e in trace["traceEvents"]:
        name = str(e.get("name", ""))
        if e.get("ph") != "X" or (e.get("pid"), e.get("tid")) != thread or not name.startswith("$"):
            continue
        if function_name(name) in SYNC_CALLS:
            for i, (start, end) in enumerate(bounds):
                if start <= e["ts"] < end:
                    waited.add(i)
    return sorted(waited)
