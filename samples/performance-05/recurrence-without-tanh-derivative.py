# A backward pass that multiplies by W.T at every layer but forgets the tanh derivative
# (1 - h**2): it is written by hand, but it is wrong, so it loses the recurrence's agreement points.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=0 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace reverse_recurrence
def reverse_recurrence(v, weight, depth):
    weight = np.asarray(weight)
    h = np.asarray(v)
    for _ in range(depth):
        h = np.tanh(weight @ h)
    g = 2 * h
    for _ in range(depth):
        g = weight.T @ g
    return g
