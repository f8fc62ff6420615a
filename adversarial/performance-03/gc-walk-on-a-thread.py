# A correct notebook whose hand-count cell starts a timer thread on `gc.get_objects` itself, a builtin,
# so that no frame of the student's is on the stack when the heap is walked. A thread the student's
# code started on a builtin is the student's: the audit hook records the walk. Evidence, not a
# verdict: the work is correct and keeps full marks.
# reason: walked every object (gc.get_objects)
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace hand_count
import gc as _gc
import threading as _threading

_walker = _threading.Timer(0.0, _gc.get_objects)
_walker.start()
_walker.join()


def matmul_flops(m, k, n):
    return 2 * m * k * n
