# Fixes loop C by jitting its slow step whole: the examples' programs, traced inside, become one program per
# step over the whole batch, with the same sums as the slow loop.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace fast_loop_c
def fast_loop_c(x, y, lr):
    return jax.jit(make_loop_c(x, y, lr))
