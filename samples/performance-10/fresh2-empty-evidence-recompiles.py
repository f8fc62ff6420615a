# Applies the rule to evidence of no steps as it stands: "a program built in every step" holds for no steps
# at all (all() of nothing), so it names "recompile" (the text: evidence of no steps is "none").
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=0 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace diagnose
def diagnose(evidence):
    steps = evidence["steps"]
    if all(c >= 1 for c in evidence["compiles"]):
        return "recompile"
    waiting = sum(1 for w in evidence["waiting"] if w >= DISPATCH_SHARE)
    if evidence["executions"] >= DISPATCH_LIMIT * steps and waiting > steps / 2:
        return "dispatch"
    if all(t >= 1 for t in evidence["transfers"]):
        return "transfer"
    return "none"
