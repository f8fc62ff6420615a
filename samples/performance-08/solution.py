# The source notebook's own solutions: full marks.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# %% solutions
