# Times each gradient call without waiting for its result: measures dispatch, not the
# computation. It keeps the first call apart, so it loses the synchronization points only.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timer_first_call_apart=1 test_timer_synchronized=0 test_reverse_recurrence=3 test_recurrence_by_hand=1
# %% solutions
# %% replace timer
import time


def time_gradient(fn, *args, warm_calls=5):
    start = time.perf_counter()
    fn(*args)
    first_call_seconds = time.perf_counter() - start
    warm_samples_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        fn(*args)
        warm_samples_seconds.append(time.perf_counter() - start)
    return first_call_seconds, warm_samples_seconds
