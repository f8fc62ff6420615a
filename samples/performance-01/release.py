# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
