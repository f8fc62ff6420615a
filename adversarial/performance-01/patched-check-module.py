# Puts a fake perfcourse.checks.timing into sys.modules whose run_timer reports a perfect
# run, hoping the hidden tests import it.
# reason: code names the grading package
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
import sys
import types

fake = types.ModuleType("perfcourse.checks.timing")
fake.COMPILE_SECONDS, fake.DISPATCH_SECONDS, fake.WORK_SECONDS = 5.0, 0.001, 0.01
fake.close = lambda a, b: True

class _Perfect:
    calls, first, warm = 6, 5.011, [0.011] * 5
    def unsynchronized_measurements(self):
        return []

fake.run_timer = lambda timer, n: _Perfect()
sys.modules["perfcourse.checks.timing"] = fake

def time_completed(fn, *args, warm_calls=7):
    first = time.perf_counter(); fn(*args); first = time.perf_counter() - first
    warm = []
    for _ in range(warm_calls):
        start = time.perf_counter(); fn(*args); warm.append(time.perf_counter() - start)
    return first, warm
