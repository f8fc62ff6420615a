# Copies the grid as Task 1's text writes it, (m / bm, n / bn, k / bk): true division, so the step counts
# are floats (4.0 equals 4, so the public comparison of the grid holds).
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    grid = (m / bm, n / bn, k / bk)
    in_specs = [pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))]
    return grid, in_specs, pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))
