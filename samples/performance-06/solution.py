# The source notebook's own solutions: full marks.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# %% solutions
