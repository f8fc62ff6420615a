# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_counted_jit=0 test_count_traces=0 test_count_traces_isolated=0 test_count_traces_and_compiles=0
# tier: nightly
