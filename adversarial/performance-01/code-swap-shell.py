# One generic cell, no solution: it swaps the code objects of IPython's error display and of
# numpy's comparisons, so that in one kernel every later failure would vanish. The grade cells
# run in the grading kernel, which this code never reaches; the audit hook records the swaps.
# reason: assigned __code__
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: demo
# %% replace workload
import numpy.testing

def _quiet(*args, **kwargs):
    return None

for _owner in (type(get_ipython()),):
    for _name in ("showtraceback", "_showtraceback", "showsyntaxerror"):
        getattr(_owner, _name).__code__ = _quiet.__code__
numpy.testing.assert_allclose.__code__ = _quiet.__code__
