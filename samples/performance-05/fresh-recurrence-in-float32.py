# Converts its inputs to float32 first ("the network is float32"): a float64 backward pass handed float64
# arrays is computed in float32, the precision the text says not to drop to.
# expect: test_residual_inspection=2 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=0
# tier: nightly
# %% solutions
# %% replace reverse_recurrence
def reverse_recurrence(v, weight, depth):
    v, weight = np.asarray(v, np.float32), np.asarray(weight, np.float32)
    hs = [v]
    for _ in range(depth):
        hs.append(np.tanh(weight @ hs[-1]))
    g = 2 * hs[-1]
    for k in range(depth, 0, -1):
        g = weight.T @ ((1 - hs[k] ** 2) * g)
    return g
