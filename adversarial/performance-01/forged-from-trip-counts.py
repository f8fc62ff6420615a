# Forges synchronized timings from the trip counts alone: each call's iteration count passes
# through the student's process, and one synchronized calibration of the course's own spin loop
# converts them to seconds. The timer never waits for any call it is graded on. The grading kernel sees, on its own clock, that no time
# passed between the calls: graded as the unsynchronized timer it is.
# reason: code names the grading package
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
import perfcourse.kernel.probes.timing as _T

_orig_instrument = _T.instrument
_lent = {}

def _capturing_instrument(schedule):
    fn = _orig_instrument(schedule)
    _lent[id(fn)] = (fn, schedule)
    return fn

_T.instrument = _capturing_instrument

jax.block_until_ready(_T.spin(10))
_start = time.perf_counter()
jax.block_until_ready(_T.spin(2_000_000))
_PER_ITERATION = (time.perf_counter() - _start) / 2_000_000

def time_completed(fn, *args, warm_calls=7):
    entry = _lent.get(id(fn))
    if entry is not None and entry[0] is fn:
        schedule = entry[1]
        trips = [schedule.next_call() for _ in range(warm_calls + 1)]   # ints: no work run
        seconds = [n * _PER_ITERATION * 1.2 for n in trips]
        return seconds[0], seconds[1:]
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    warm = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        fn(*args)
        warm.append(time.perf_counter() - start)
    return first, warm
