# Names a loop dispatch-bound from its programs per step alone, at two per step (the limit the lesson
# used to give), and never reads the device's waiting: the three given loops read right, but a healthy
# loop of a step and its metrics update, and jnp.asarray of the batch in every step (which from jax
# 0.10 also runs a small program per array), read as dispatch-bound (the public check's written
# two-program step already says so). Loses the diagnosis points only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=0 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace diagnose
def diagnose(evidence):
    steps = evidence["steps"]
    if steps and all(c > 0 for c in evidence["compiles"]):
        return "recompile"
    if steps and evidence["executions"] >= 2 * steps:
        return "dispatch"
    if steps and all(t > 0 for t in evidence["transfers"]):
        return "transfer"
    return "none"
