# os._exit() in the timer cell kills the kernel: the cells after it are not run, and the
# notebook is still scored.
# reason: KernelDied
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: demo
# %% solutions
# %% replace timer
import os
os._exit(0)
