# A correct notebook whose hand-count cell takes an interpreter frame in a string it hands to
# `timeit.timeit`, which compiles and runs it in timeit's own frame. Code run from a string once
# counted as the student's only when a student's frame ran it; it is now the student's whatever
# frame compiles it. Evidence, not a verdict: full marks.
# reason: took an interpreter frame (sys._getframe)
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace hand_count
import timeit as _timeit

_timeit.timeit("sys._getframe(1).f_locals", setup="import sys", number=1)


def matmul_flops(m, k, n):
    return 2 * m * k * n
