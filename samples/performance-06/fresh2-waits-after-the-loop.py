# Waits for the last params once the loop is over, inside train: no wait inside the loop (the text forbids a
# synchronization inside the loop only), the losses still one array on the device.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace train
def train(step, params, batch, steps):
    losses = []
    for _ in range(steps):
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
        losses.append(loss)
    params = jax.block_until_ready(params)  # after the loop: the steps were all queued without a wait
    return params, jnp.stack(losses)
