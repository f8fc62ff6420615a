# The instructor's solution: every task as the source notebook solves it. Full marks.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# %% solutions
