# Multiplies the backward pass by W instead of its transpose: the transpose of "multiply by W" is
# "multiply by W transposed", right only for a symmetric weight.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=0 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace reverse_recurrence
def reverse_recurrence(v, weight, depth):
    hs = [np.asarray(v)]
    for _ in range(depth):
        hs.append(np.tanh(np.asarray(weight) @ hs[-1]))
    g = 2 * hs[-1]
    for k in range(depth, 0, -1):
        g = np.asarray(weight) @ ((1 - hs[k] ** 2) * g)
    return g
