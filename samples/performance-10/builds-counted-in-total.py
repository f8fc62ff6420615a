# Reads "a program built in every step" as "at least as many programs built as steps": a loop that
# builds two programs in one step and none in the next reads as recompiling, though one step built
# nothing. The lesson's loops build evenly, so the public checks pass. Loses the diagnosis points
# only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=0 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace diagnose
def diagnose(evidence):
    n = evidence["steps"]
    if n == 0:
        return "none"
    if sum(evidence["compiles"]) >= n:
        return "recompile"
    slow = [w >= DISPATCH_SHARE for w in evidence["waiting"]]
    if evidence["executions"] >= DISPATCH_LIMIT * n and sum(slow) * 2 > n:
        return "dispatch"
    return "transfer" if min(evidence["transfers"]) > 0 else "none"
