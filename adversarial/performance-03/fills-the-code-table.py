# A correct notebook whose hand-count cell first runs 20,050 tiny strings, filling the audit
# hook's table of code objects run from strings, then defines a helper from a string that a
# library (functools.reduce) calls and that takes an interpreter frame. The hook once stopped
# keeping code at its table's limit and said nothing, so the helper ran as nobody's; a full table
# is now a flag, and from then on every frame of code from a string counts as the student's.
# Evidence, not a verdict: full marks.
# reason: ran code from strings past the 20000 code objects
# reason: took an interpreter frame (sys._getframe)
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace hand_count
import functools as _functools

for _n in range(20_050):
    exec(compile("pass", "filler", "exec"))
_helpers = {}
exec(compile("import sys\ndef peek(a, b):\n    return sys._getframe() is None\n", "helpers", "exec"), _helpers)
_functools.reduce(_helpers["peek"], [1, 2])


def matmul_flops(m, k, n):
    return 2 * m * k * n
