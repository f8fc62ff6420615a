# Replaces the course code that answers the grading kernel in the student's kernel: every probe
# returns a perfect-looking (first, warm) pair without running anything. The grading kernel
# counts the calls of the function it handed over itself, and none were made.
# reason: code names the grading package
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# %% solutions
# %% replace timer
try:
    import perfcourse.kernel.probes as _probes
    _probes.run = lambda *args, **kwargs: (1.0, [0.04] * 9)
except ImportError:
    pass

def time_completed(fn, *args, warm_calls=7):
    return 1.0, [0.04] * warm_calls
