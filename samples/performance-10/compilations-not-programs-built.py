# Counts a step's compilations (backend_compile_and_load) instead of the programs built (the
# lowering, lower_sharding_computation): on the lesson's loops, without a compilation cache, every
# lowering is followed by a compilation, so the public checks pass; but with the persistent
# compilation cache on, a loop that retraces in every step compiles nothing and still rebuilds its
# program in every step, and this reading shows no sign of it. Loses the evidence points only.
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
    runs = sorted((start, end) for _, start, end in device_runs(trace).values() if start >= steps[0]["ts"])
    evidence = {"steps": len(steps), "compiles": [], "transfers": [], "executions": len(runs), "waiting": []}
    for step in steps:
        start, end = step["ts"], step["ts"] + step["dur"]
        inside = [e["name"] for e in complete if (e["pid"], e["tid"]) == thread and start <= e["ts"] <= end]
        evidence["compiles"].append(inside.count("backend_compile_and_load"))
        evidence["transfers"].append(sum(name in TRANSFER_EVENTS for name in inside))
        mine = [run for run in runs if start <= run[0] <= end]
        evidence["waiting"].append(sum(max(0.0, b[0] - a[1]) for a, b in zip(mine, mine[1:])) / step["dur"])
    return evidence
