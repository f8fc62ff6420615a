# Reads the steps' thread and the loop's start from the first step without asking whether there is
# one: a trace with no step of that name makes it raise instead of reporting zero steps, as the
# lesson asks. Every trace of the lesson has steps, so the public checks pass. Loses the evidence
# points only.
# expect: test_trace_steps=2 test_step_evidence=0 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace step_evidence
def step_evidence(trace, scope):
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in complete if e.get("name") == scope), key=lambda e: e["ts"])
    first = steps[0]
    mine = [e for e in complete if e["pid"] == first["pid"] and e["tid"] == first["tid"]]
    runs = sorted(span[1:] for span in device_runs(trace).values() if span[1] >= first["ts"])
    result = {"steps": len(steps), "compiles": [], "transfers": [], "executions": len(runs), "waiting": []}
    for step in steps:
        end = step["ts"] + step["dur"]
        within = [e["name"] for e in mine if step["ts"] <= e["ts"] <= end]
        result["compiles"].append(len([n for n in within if n in COMPILE_EVENTS]))
        result["transfers"].append(len([n for n in within if n in TRANSFER_EVENTS]))
        started = [span for span in runs if step["ts"] <= span[0] <= end]
        idle = 0.0
        for before, after in zip(started, started[1:]):
            idle += max(0.0, after[0] - before[1])
        result["waiting"].append(idle / step["dur"] if step["dur"] else 0.0)
    return result
