# The instructor's solution: every task as the source notebook solves it. Full marks.
# expect: test_roofline_point=3 test_time_calls=2 test_classify=3 test_hand_intensity=2
# %% solutions
