# The source notebook's own solutions: full marks.
# expect: test_workload=2 test_first_call_evidence=3 test_trace_count=2 test_evidence=2 test_audit=1
# %% solutions
