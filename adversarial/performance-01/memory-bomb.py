# Allocates memory until something gives: the kernel's memory limit raises MemoryError.
# expect: test_workload=3 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% solutions
# %% replace timer
hoard = []
while True:
    hoard.append(bytearray(1 << 27))
