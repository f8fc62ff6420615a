# Appends a step's index once for every waiting call in it: a step with two waits is listed twice (the text
# asks for the indices of the steps that waited).
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
    waited = []
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or (e.get("pid"), e.get("tid")) != thread:
            continue
        if function_name(str(e.get("name", ""))) in SYNC_CALLS:
            waited += [i for i, (start, end) in enumerate(bounds) if start <= e["ts"] < end]
    return sorted(waited)
