# Reads "most steps" as at least half of them: a loop whose device waits in exactly half its steps
# reads as dispatch-bound. The lesson says more than half. Loses the diagnosis points only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=0 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace diagnose
def diagnose(evidence):
    steps = evidence["steps"]
    if steps and all(c > 0 for c in evidence["compiles"]):
        return "recompile"
    waits = sum(w >= DISPATCH_SHARE for w in evidence["waiting"])
    if steps and evidence["executions"] >= DISPATCH_LIMIT * steps and 2 * waits >= steps:
        return "dispatch"
    if steps and all(t > 0 for t in evidence["transfers"]):
        return "transfer"
    return "none"
