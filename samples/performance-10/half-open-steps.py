# Takes a step's span as half open, [ts, ts + dur): an event that starts exactly where a step ends
# is left out, though the lesson counts what starts at or before ts + dur. The lesson's own traces
# put nothing on that edge, so the public checks pass. Loses the evidence points only.
# expect: test_trace_steps=2 test_step_evidence=0 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace step_evidence
def step_evidence(trace, scope):
    done = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in done if e.get("name") == scope), key=lambda e: e["ts"])
    if not steps:
        return {"steps": 0, "compiles": [], "transfers": [], "executions": 0, "waiting": []}
    lane = (steps[0]["pid"], steps[0]["tid"])
    runs = sorted((a, b) for _, a, b in device_runs(trace).values() if a >= steps[0]["ts"])
    out = {"steps": len(steps), "compiles": [], "transfers": [], "executions": len(runs), "waiting": []}
    for s in steps:
        lo, hi = s["ts"], s["ts"] + s["dur"]
        names = [e["name"] for e in done if (e["pid"], e["tid"]) == lane and lo <= e["ts"] < hi]
        out["compiles"].append(sum(n in COMPILE_EVENTS for n in names))
        out["transfers"].append(sum(n in TRANSFER_EVENTS for n in names))
        inside = [r for r in runs if lo <= r[0] <= hi]
        gaps = sum(max(0.0, nxt[0] - cur[1]) for cur, nxt in zip(inside, inside[1:]))
        out["waiting"].append(gaps / s["dur"] if s["dur"] > 0 else 0.0)
    return out
