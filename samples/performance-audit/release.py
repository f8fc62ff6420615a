# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_workload=0 test_first_call_evidence=0 test_trace_count=0 test_evidence=0 test_audit=0
# tier: nightly
