# No wait inside the loop, but turns the losses into NumPy numbers after it, inside train: the task asks
# for one array still on the device. Loses the loop's points only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=0 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace train
def train(step, params, batch, steps):
    losses = []
    for _ in range(steps):
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
        losses.append(loss)
    return params, np.asarray(jnp.stack(losses))
