# Counts one operation per multiply-add: m*k*n, half the flops of the product. Loses the
# hand-count points only.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=0
# tier: nightly
# %% solutions
# %% replace hand_count
def matmul_flops(m, k, n):
    return m * k * n
