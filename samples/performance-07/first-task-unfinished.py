# Leaves Task 1 unfinished and does the rest right: the timer, the classification (judged on
# ceilings picked at grading time) and the hand count keep their points (the ceilings, measured
# after the last check, cannot be measured without Task 1). Each mistake costs its own cell only.
# expect: test_roofline_point=0 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roofline_point
def roofline_point(costs, seconds):
    raise NotImplementedError("not done yet")
