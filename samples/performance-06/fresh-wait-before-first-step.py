# Gives a wait before the first step to step 0: the task says a wait before the first step belongs to
# no step. Loses the points for finding the waits only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=0 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace find_syncs
def find_syncs(trace, scope):
    events = trace["traceEvents"]
    steps = sorted((e for e in events if e.get("ph") == "X" and e.get("name") == scope), key=lambda e: e["ts"])
    waits = [e for e in events if e.get("ph") == "X" and function_name(str(e.get("name", ""))) in SYNC_CALLS]
    found = set()
    for i, step in enumerate(steps):
        start = step["ts"] if i else float("-inf")
        end = steps[i + 1]["ts"] if i + 1 < len(steps) else step["ts"] + step["dur"]
        line = (step.get("pid"), step.get("tid"))
        if any((w.get("pid"), w.get("tid")) == line and start <= w["ts"] < end for w in waits):
            found.add(i)
    return sorted(found)
