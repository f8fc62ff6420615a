# Index maps that turn the grid indices into Python ints: right when called with ints, as a check
# that calls them one grid point at a time would, but pallas_call traces them and they fail there.
# Loses the tiling's points only.
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    def pick(*indices):
        return tuple(int(v) for v in indices)

    grid = (m // bm, n // bn, k // bk)
    in_specs = [pl.BlockSpec((bm, bk), lambda i, j, kk: pick(i, kk)),
                pl.BlockSpec((bk, bn), lambda i, j, kk: pick(kk, j))]
    return grid, in_specs, pl.BlockSpec((bm, bn), lambda i, j, kk: pick(i, j))
