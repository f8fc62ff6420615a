# A correct notebook whose hand-count cell displays HTML with a script and an event handler, and a
# JavaScript output, addressed to whoever opens the graded notebook: in Formgrader they once ran
# in the instructor's Jupyter origin, with the instructor's session (whose contents API reaches
# source/). The graded notebook and its feedback are sanitized (nbconvert's SanitizeHTML, bleach):
# the text stays, nothing runs (tests/test_adversarial.py reads the graded notebook). Full marks.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# %% solutions
# %% replace hand_count
from IPython.display import HTML as _HTML, Javascript as _Javascript, display as _display

_display(_HTML("<b>for the grader</b><script>window.perfcourseRan = 1; fetch('/api/contents/source')</script>"
               "<img src=x onerror=\"window.perfcourseRan = 2\">"))
_display(_Javascript("window.perfcourseRan = 3"))


def matmul_flops(m, k, n):
    return 2 * m * k * n
