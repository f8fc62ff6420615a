# Times every call, each waiting for its result, but keeps the first call's measurement as the
# first warm sample too (and drops the last warm call's): the warm samples include compilation.
# Every measurement waited, so it loses the first-call points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timer_first_call_apart=0 test_timer_synchronized=3 test_reverse_recurrence=3 test_recurrence_by_hand=1
# %% solutions
# %% replace timer
import time


def time_gradient(fn, *args, warm_calls=5):
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return samples[0], samples[:warm_calls]
