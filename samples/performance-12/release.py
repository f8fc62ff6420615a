# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_matmul_kernel=0 test_tiling=0 test_traffic=0 test_tolerance=0
# tier: nightly
