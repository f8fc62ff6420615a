# The source notebook's solutions: full marks.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=2
# %% solutions
