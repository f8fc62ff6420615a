# Counts a step's compilations and copies from its start to the next step's start, as
# performance-06 attributed waits: in the lesson's traces nothing happens between steps, so the
# public checks pass, but a copy or a compilation after a step's scope (logging, a conversion) is
# no step's. Loses the evidence points only.
# expect: test_trace_steps=2 test_step_evidence=0 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace step_evidence
def step_evidence(trace, scope):
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in complete if e.get("name") == scope), key=lambda e: e["ts"])
    if not steps:
        return {"steps": 0, "compiles": [], "transfers": [], "executions": 0, "waiting": []}
    thread = (steps[0]["pid"], steps[0]["tid"])
    ends = [s["ts"] for s in steps[1:]] + [steps[-1]["ts"] + steps[-1]["dur"]]
    runs = sorted((start, end) for _, start, end in device_runs(trace).values() if start >= steps[0]["ts"])
    compiles, transfers, waiting = [], [], []
    for step, end in zip(steps, ends):
        inside = [e["name"] for e in complete if (e["pid"], e["tid"]) == thread and step["ts"] <= e["ts"] <= end]
        compiles.append(sum(name in COMPILE_EVENTS for name in inside))
        transfers.append(sum(name in TRANSFER_EVENTS for name in inside))
        mine = [r for r in runs if step["ts"] <= r[0] <= step["ts"] + step["dur"]]
        waiting.append(sum(max(0.0, b[0] - a[1]) for a, b in zip(mine, mine[1:])) / step["dur"])
    return {"steps": len(steps), "compiles": compiles, "transfers": transfers, "executions": len(runs),
            "waiting": waiting}
