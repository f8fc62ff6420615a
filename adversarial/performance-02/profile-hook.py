# A correct notebook whose count_traces cell leaves a profile function for every new thread
# (`threading.setprofile`, which raises no audit event of its own), so that threads started later see
# every call made on them. The audit hook looks for trace and profile functions in place at each
# cell's start. Evidence, not a verdict: the work is correct and keeps full marks.
# reason: a profile function for new threads was in place (threading.setprofile)
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
import threading as _threading

_calls_seen = []
_threading.setprofile(lambda frame, event, arg: _calls_seen.append(event))


def count_traces(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]
