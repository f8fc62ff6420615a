# Reads "a copy in every step" as "as many copies as steps": a loop that copies twice in one step and
# never in another reads as transfer-bound. No evidence the check wrote, and none of the course's
# loops, held copies in some steps but not all (every drawn case copied in every step or never), so
# this rule met every case of every run: 14/14. The written evidence now holds copies in all steps
# but one, as many as the steps or more, whose cause is "none". Loses the diagnosis points only.
# tier: nightly
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=0 test_fix_a=2 test_fix_b=2 test_fix_c=2
# %% solutions
# %% replace diagnose
def diagnose(evidence):
    steps = evidence["steps"]
    if steps and all(c > 0 for c in evidence["compiles"]):
        return "recompile"
    waiting = [w for w in evidence["waiting"] if w >= DISPATCH_SHARE]
    if steps and evidence["executions"] >= DISPATCH_LIMIT * steps and len(waiting) > steps / 2:
        return "dispatch"
    if steps and sum(evidence["transfers"]) >= steps:
        return "transfer"
    return "none"
