# Writes the index maps with their arguments in the product's order (i, kk, j), while the grid is
# (m // bm, n // bn, k // bk): each map reads the grid's j as kk and its kk as j.
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    grid = (m // bm, n // bn, k // bk)
    in_specs = [pl.BlockSpec((bm, bk), lambda i, kk, j: (i, kk)),
                pl.BlockSpec((bk, bn), lambda i, kk, j: (kk, j))]
    return grid, in_specs, pl.BlockSpec((bm, bn), lambda i, kk, j: (i, j))
