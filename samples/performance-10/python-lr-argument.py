# Fixes loop A by jitting sgd_update once, and passes the learning rate at every call: a Python
# float argument is copied to the device at every call, so the loop no longer recompiles but now
# copies in every step. Loses the points for fixing loop A only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=0 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace fast_loop_a
def fast_loop_a(x, y, lr):
    update = jax.jit(sgd_update)

    def step(params):
        return update(params, x, y, lr)
    return step
