# One generic cell, no solution: it swaps the code objects of IPython's error display and of
# numpy's comparisons, so that in one kernel every later failure would vanish. The grade cells
# run in the grading kernel, which this code never reaches; the audit hook records the swaps.
# reason: assigned __code__
# expect: test_scanned_result=0 test_scanned_size=0 test_measure_equations=0 test_measure_compile_apart=0 test_loop_growth=0
# tier: nightly
# %% replace scanned
import numpy.testing

def _quiet(*args, **kwargs):
    return None

for _name in ("showtraceback", "_showtraceback", "showsyntaxerror"):
    getattr(type(get_ipython()), _name).__code__ = _quiet.__code__
numpy.testing.assert_allclose.__code__ = _quiet.__code__
