# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_estimates_absent=0 test_read_program_stages=0 test_read_program_not_run=0 test_hand_count=0
# tier: nightly
