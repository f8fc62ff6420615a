# Fixes loop C's gradient (one program over the whole batch) but applies the update with
# jax.tree.map outside any jit: each weight's update is two eager operations, each a program of its
# own (and each Python float handed to one is a copy), so the step still runs five programs. Loses
# the points for fixing loop C only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=0
# tier: nightly
# %% solutions
# %% replace fast_loop_c
def fast_loop_c(x, y, lr):
    value_and_grad = jax.jit(jax.value_and_grad(loss_fn))

    def step(params):
        loss, grads = value_and_grad(params, x, y)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
    return step
