# Reads the device's waiting from its mean over the steps, not from most steps (more than half) as the
# rule says: one step where the device waited through it all outweighs the rest. Loses the diagnosis.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=0 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace diagnose
def diagnose(evidence):
    steps = evidence["steps"]
    if not steps:
        return "none"
    if all(count >= 1 for count in evidence["compiles"]):
        return "recompile"
    mean_waiting = sum(evidence["waiting"]) / steps
    if evidence["executions"] >= DISPATCH_LIMIT * steps and mean_waiting >= DISPATCH_SHARE:
        return "dispatch"
    if all(count >= 1 for count in evidence["transfers"]):
        return "transfer"
    return "none"
