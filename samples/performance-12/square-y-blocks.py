# Writes y's block shape as (bn, bk), rows and columns swapped: the same as (bk, bn) only where the
# blocks are square (bn = bk). Loses the tiling's points only.
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    grid = (m // bm, n // bn, k // bk)
    in_specs = [pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                pl.BlockSpec((bn, bk), lambda i, j, kk: (kk, j))]
    return grid, in_specs, pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))
