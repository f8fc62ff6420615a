# The source notebook's own solutions: full marks.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# %% solutions
