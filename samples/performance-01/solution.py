# The source notebook's own solutions: full marks.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
