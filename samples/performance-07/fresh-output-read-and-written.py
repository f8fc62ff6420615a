# Counts the result as read and written (an accumulator updated in memory), where the task's best case
# reads each operand once and writes the result once.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=0
# tier: nightly
# %% solutions
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    return 2 * m * k * n / ((m * k + k * n + 2 * m * n) * itemsize)
