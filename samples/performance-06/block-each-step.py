# Keeps the losses on the device but waits for each step "to be safe" (jax.block_until_ready inside
# the step's scope): no value comes back, and yet the host still stops at every step. Loses the
# points for the loop only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=0 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace train
def train(step, params, batch, steps):
    losses = []
    for _ in range(steps):
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
            jax.block_until_ready(loss)
        losses.append(loss)
    return params, jnp.stack(losses)
