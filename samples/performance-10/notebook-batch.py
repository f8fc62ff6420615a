# Fixes loop B by closing over the notebook's own device batch (x_dev, y_dev) instead of putting the
# arrays it is given on the device: the lesson's public check passes (it is the same batch), but the
# loop trains on the notebook's data whatever batch it is built with. Loses the points for fixing
# loop B only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=0 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace fast_loop_b
def fast_loop_b(x_host, y_host, lr):
    update = jax.jit(functools.partial(sgd_update, lr=lr))

    def step(params):
        return update(params, x_dev, y_dev)  # already on the device
    return step
