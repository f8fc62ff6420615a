# Puts the learning rate on the device as a scalar array, as the text advises for a schedule, but makes
# it in every step: a copy in every step. Loses the points of loop A's fix only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=0 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace fast_loop_a
def fast_loop_a(x, y, lr):
    update = jax.jit(sgd_update)

    def step(params):
        return update(params, x, y, jnp.float32(lr))
    return step
