# Counts the programs built and the copies on every thread inside a step's span: the task counts
# them on the steps' thread only. Loses the evidence points only.
# expect: test_trace_steps=2 test_step_evidence=0 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace step_evidence
def step_evidence(trace, scope):
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in complete if e.get("name") == scope), key=lambda e: e["ts"])
    if not steps:
        return {"steps": 0, "compiles": [], "transfers": [], "executions": 0, "waiting": []}
    line = (steps[0].get("pid"), steps[0].get("tid"))

    def per_step(names):
        return [sum(1 for e in complete if e.get("name") in names
                    and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]) for s in steps]

    runs = sorted((start, end) for _, start, end in device_runs(trace).values())
    waiting = []
    for s in steps:
        low, high = s["ts"], s["ts"] + s["dur"]
        inside = [run for run in runs if low <= run[0] <= high]
        idle = sum(max(0.0, later[0] - earlier[1]) for earlier, later in zip(inside, inside[1:]))
        waiting.append(min(1.0, idle / s["dur"]) if s["dur"] > 0 else 0.0)
    return {"steps": len(steps), "compiles": per_step(COMPILE_EVENTS), "transfers": per_step(TRANSFER_EVENTS),
            "executions": sum(1 for start, _ in runs if start >= steps[0]["ts"]), "waiting": waiting}
