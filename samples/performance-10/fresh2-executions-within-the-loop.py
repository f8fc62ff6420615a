# Counts only the executions that start between the first step's start and the last step's end: the last
# steps' programs, which the device runs after the host has left the loop, are missed (the text: every
# execution that starts at or after the first step's start).
# expect: test_trace_steps=2 test_step_evidence=0 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace step_evidence
def step_evidence(trace, scope):
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e.get("name") == scope), key=lambda e: e["ts"])
    if not steps:
        return {"steps": 0, "compiles": [], "transfers": [], "executions": 0, "waiting": []}
    thread = (steps[0]["pid"], steps[0]["tid"])
    first, last = steps[0]["ts"], steps[-1]["ts"] + steps[-1]["dur"]
    runs = sorted((start, end) for _, start, end in device_runs(trace).values())
    evidence = {"steps": len(steps), "compiles": [], "transfers": [], "waiting": [],
                "executions": sum(1 for start, _ in runs if first <= start <= last)}
    for s in steps:
        inside = [e for e in events if (e["pid"], e["tid"]) == thread and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
        evidence["compiles"].append(sum(1 for e in inside if e["name"] in COMPILE_EVENTS))
        evidence["transfers"].append(sum(1 for e in inside if e["name"] in TRANSFER_EVENTS))
        mine = [r for r in runs if s["ts"] <= r[0] <= s["ts"] + s["dur"]]
        gaps = sum(max(0.0, b[0] - a[1]) for a, b in zip(mine, mine[1:]))
        evidence["waiting"].append(gaps / s["dur"] if s["dur"] else 0.0)
    return evidence
