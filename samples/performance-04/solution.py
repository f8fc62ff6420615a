# The source notebook's own solutions: full marks.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# %% solutions
