# Looks only for float(): the planted synchronization in the lesson's loop, so the public checks
# pass, but .item(), block_until_ready and a bare transfer wait just the same. Loses the points for
# finding the waits only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=0 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace find_syncs
def find_syncs(trace, scope):
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in complete if e.get("name") == scope), key=lambda e: e["ts"])
    if not steps:
        return []
    thread = (steps[0]["pid"], steps[0]["tid"])
    starts = [s["ts"] for s in steps]
    ends = starts[1:] + [steps[-1]["ts"] + steps[-1]["dur"]]
    synced = set()
    for event in complete:
        if (event.get("pid"), event.get("tid")) != thread or "__float__" not in event["name"]:
            continue
        for i, (start, end) in enumerate(zip(starts, ends)):
            if start <= event["ts"] < end or (i == len(steps) - 1 and event["ts"] == end):
                synced.add(i)
    return sorted(synced)
