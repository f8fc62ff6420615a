# Counts k multiplies and k - 1 adds per output, leaving out the first add into the running sum (the text:
# k multiplies and k adds, as XLA's cost model counts).
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=0
# tier: nightly
# %% solutions
# %% replace hand_count
def matmul_flops(m, k, n):
    return m * n * (2 * k - 1)
