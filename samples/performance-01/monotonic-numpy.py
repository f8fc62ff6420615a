# Correct, in other idioms: jit through functools.partial, and a timer that reads time.monotonic
# and synchronizes by converting each result to a NumPy array; a queued timer that keeps its
# calls with map and waits for them all.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% replace workload
import functools

@functools.partial(jax.jit)
def workload(x, w):
    return jnp.tanh(x @ w)
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    samples = []
    for _ in range(warm_calls + 1):
        start = time.monotonic()
        np.asarray(fn(*args))
        samples.append(time.monotonic() - start)
    return samples[0], samples[1:]
# %% replace queued
def time_queued(fn, *args, calls=50):
    np.asarray(fn(*args))  # converting to NumPy waits for the first call's result
    start = time.monotonic()
    outs = list(map(lambda _: fn(*args), range(calls)))
    jax.block_until_ready(outs)
    return (time.monotonic() - start) / calls
