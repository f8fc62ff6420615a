# The source notebook's solutions: full marks.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# %% solutions
