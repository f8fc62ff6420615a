# The release notebook, untouched: every solution cell still raises NotImplementedError.
# expect: test_scanned_result=0 test_scanned_size=0 test_measure_equations=0 test_measure_compile_apart=0 test_loop_growth=0
# tier: nightly
