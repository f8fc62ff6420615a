# Calls jax.jit on the same module-level function in every step, lr static: the text says jax.jit of the same
# function again finds JAX's cache, so nothing is built after the warm-up, nothing copied, one program a step.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace fast_loop_a
def fast_loop_a(x, y, lr):
    def step(params):
        return jax.jit(sgd_update, static_argnums=3)(params, x, y, lr)
    return step
