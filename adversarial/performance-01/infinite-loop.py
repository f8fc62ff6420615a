# An infinite loop in the timer cell: interrupted at the cell time limit.
# reason: CellTimeoutError
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
while True:
    pass
