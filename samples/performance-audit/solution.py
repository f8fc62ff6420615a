# The source notebook's own solutions: full marks.
# expect: test_workload=2 test_timer_first_call=1 test_timer_synchronized=2 test_trace_count=2 test_evidence=2 test_audit=1
# %% solutions
