# A correct workload and an unsynchronized timer, plus code-object swaps of the course's own
# check functions, imported into the student's kernel, so that they would accept anything. The
# student's kernel has no checks to import (only the package's kernel and channel code), and the
# checks that grade run in the grading kernel, where no swap could reach them either.
# reason: code names the grading package
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def _accepts_anything(*args, **kwargs):
    return None

try:
    from perfcourse.checks import timing as _timing
    _timing.check_synchronized.__code__ = _accepts_anything.__code__
    _timing.check_first_call_apart.__code__ = _accepts_anything.__code__
except ImportError:
    pass

def time_completed(fn, *args, warm_calls=7):
    samples = []
    for _ in range(warm_calls + 1):
        start = time.perf_counter()
        fn(*args)
        samples.append(time.perf_counter() - start)
    return samples[0], samples[1:]
