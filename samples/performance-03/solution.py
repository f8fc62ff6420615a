# The source notebook's own solutions: full marks.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# %% solutions
