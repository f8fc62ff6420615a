# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_trace_steps=0 test_step_evidence=0 test_diagnose=0 test_fix_a=0 test_fix_b=0 test_fix_c=0
# tier: nightly
