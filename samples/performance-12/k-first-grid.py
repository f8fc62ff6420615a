# Puts the k blocks first in the grid, the index maps following: each output block is visited once
# per k block but not in a row, and the body's pl.program_id(2) is no longer k. Loses the tiling's
# points only.
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    grid = (k // bk, m // bm, n // bn)
    in_specs = [pl.BlockSpec((bm, bk), lambda kk, i, j: (i, kk)),
                pl.BlockSpec((bk, bn), lambda kk, i, j: (kk, j))]
    return grid, in_specs, pl.BlockSpec((bm, bn), lambda kk, i, j: (i, j))
