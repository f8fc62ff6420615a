# Removes float(loss) but prints each step's loss instead: formatting an array needs its value, so
# the host still waits at every step. Loses the points for the loop only.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=0 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace train
def train(step, params, batch, steps):
    losses = []
    for i in range(steps):
        with jax.profiler.TraceAnnotation(STEP_SCOPE):
            params, loss = step(params, batch)
        print(f"step {i}: loss {loss}")
        losses.append(loss)
    return params, jnp.stack(losses)
