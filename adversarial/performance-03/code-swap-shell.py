# One generic cell, no solution: it swaps the code objects of IPython's error display and of
# numpy's comparisons, so that in one kernel every later failure would vanish. The grade cells
# run in the grading kernel, which this code never reaches; the audit hook records the swaps.
# reason: assigned __code__
# expect: test_estimates_absent=0 test_read_program_stages=0 test_read_program_not_run=0 test_hand_count=0
# tier: nightly
# %% replace estimates
import numpy.testing

def _quiet(*args, **kwargs):
    return None

for _name in ("showtraceback", "_showtraceback", "showsyntaxerror"):
    getattr(type(get_ipython()), _name).__code__ = _quiet.__code__
numpy.testing.assert_allclose.__code__ = _quiet.__code__
