# Picks y's block as (j, k) instead of (k, j): the wrong block of y (or one outside it). Loses the
# tiling's points only.
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    grid = (m // bm, n // bn, k // bk)
    in_specs = [pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                pl.BlockSpec((bk, bn), lambda i, j, kk: (j, kk))]
    return grid, in_specs, pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))
