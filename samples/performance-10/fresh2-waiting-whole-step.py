# Takes the device's waiting as all of the step it was not running a program (before the first, after the
# last), not the gaps between the step's own programs: a step of one program reads as waiting most of it.
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
    runs = sorted((start, end) for _, start, end in device_runs(trace).values())
    evidence = {"steps": len(steps), "compiles": [], "transfers": [], "waiting": [],
                "executions": sum(1 for start, _ in runs if start >= steps[0]["ts"])}
    for s in steps:
        end = s["ts"] + s["dur"]
        inside = [e for e in events if (e["pid"], e["tid"]) == thread and s["ts"] <= e["ts"] <= end]
        evidence["compiles"].append(sum(1 for e in inside if e["name"] in COMPILE_EVENTS))
        evidence["transfers"].append(sum(1 for e in inside if e["name"] in TRANSFER_EVENTS))
        busy = sum(min(b, end) - a for a, b in runs if s["ts"] <= a <= end)
        evidence["waiting"].append(max(0.0, 1.0 - busy / s["dur"]) if s["dur"] else 0.0)
    return evidence
