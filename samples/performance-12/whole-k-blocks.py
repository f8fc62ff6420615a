# Ignores bk: blocks as deep as the whole shared dimension and one step along k. The product is
# right, but it is not the tiling asked for (a check of the values alone would pass it), and on a
# TPU a deep block may not fit in fast memory. Loses the tiling's points only.
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    grid = (m // bm, n // bn, 1)
    in_specs = [pl.BlockSpec((bm, k), lambda i, j, kk: (i, 0)),
                pl.BlockSpec((k, bn), lambda i, j, kk: (0, j))]
    return grid, in_specs, pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))
