# Always counts 4 bytes per element: right for float32, and blind to what bfloat16 does to the
# intensity. Loses the hand count points only.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=0
# tier: nightly
# %% solutions
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    return 2 * m * k * n / ((m * k + k * n + m * n) * 4)
