# Divides whole counts with //, so the intensity is rounded down to a whole number of FLOP/byte.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=0
# tier: nightly
# %% solutions
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    return float(2 * m * k * n // ((m * k + k * n + m * n) * itemsize))
