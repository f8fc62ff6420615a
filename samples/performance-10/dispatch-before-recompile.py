# Applies the rule with its first two tests swapped: many programs per step, then compilations. The
# written evidence of the public checks compiles with one program per step, so they pass, but a loop
# whose batch changes shape every step compiles the slicing too and runs three programs per step,
# and reads as dispatch-bound. Loses the diagnosis points only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=0 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace diagnose
def diagnose(evidence):
    steps = evidence["steps"]
    waits = sum(w >= DISPATCH_SHARE for w in evidence["waiting"])
    if steps and evidence["executions"] >= DISPATCH_LIMIT * steps and 2 * waits > steps:
        return "dispatch"
    if steps and all(c > 0 for c in evidence["compiles"]):
        return "recompile"
    if steps and all(t > 0 for t in evidence["transfers"]):
        return "transfer"
    return "none"
