# Calls a loop host-bound only above DISPATCH_LIMIT executions per step: the rule says at least. Loses
# the diagnosis points only.
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
    waited = sum(1 for share in evidence["waiting"] if share >= DISPATCH_SHARE)
    if evidence["executions"] > DISPATCH_LIMIT * steps and waited > steps / 2:
        return "dispatch"
    if all(count >= 1 for count in evidence["transfers"]):
        return "transfer"
    return "none"
