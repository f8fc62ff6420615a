# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_capture=0 test_read_trace=0 test_find_syncs=0 test_train=0 test_device_time=0 test_three_numbers=0
# tier: nightly
