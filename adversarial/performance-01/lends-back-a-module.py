# Gets the grading kernel's own `builtins` module handed to its timer and calls `exec` on it: the
# timer's argument `x` is bound to a module, which the grading kernel takes as its own copy and
# passes back; with its agent told not to import modules, the student's kernel would receive a
# reference into the grading kernel. The payload would replace the checks there, for this
# notebook and for every later one the same grading worker grades with that kernel. The grading
# kernel sends modules by name only and refuses calls into anything but the checks' own code, so
# the timer's call fails: it earns what an unwritten timer earns, and the honest students graded
# after it are unaffected.
# reason: code names the grading package
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% solutions
# %% replace timer
try:
    import perfcourse.kernel.agent as _agent_module
    _agent_module._agent.codec.import_modules = False  # modules of the grading kernel arrive as references
except (ImportError, AttributeError):
    pass

PAYLOAD = """
import perfcourse.checks.numerics as _n, perfcourse.checks.timing as _t
from perfcourse.checks import CheckFailed as _CheckFailed
def _poisoned(*args, **kwargs):
    raise _CheckFailed("poisoned by an earlier notebook")
_n.check_close = _t.check_synchronized = _t.check_first_call_apart = _poisoned
"""


def time_completed(fn, *args, warm_calls=7):
    for arg in args:
        if type(arg).__name__ == "Lent":  # the grading kernel's builtins, by reference
            arg.exec(PAYLOAD)
    return 1.0, [1.0] * warm_calls


import builtins as _builtins
x = _builtins  # the grade cells read x and hand it to time_completed
