# Index maps that return element offsets (i * bm, kk * bk), not block indices: the text says which
# block, in block units. Loses the tiling's points only.
# expect: test_matmul_kernel=3 test_tiling=0 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    def x_block(i, j, kk):
        return i * bm, kk * bk

    def y_block(i, j, kk):
        return kk * bk, j * bn

    def out_block(i, j, kk):
        return i * bm, j * bn

    grid = (m // bm, n // bn, k // bk)
    return grid, [pl.BlockSpec((bm, bk), x_block), pl.BlockSpec((bk, bn), y_block)], pl.BlockSpec((bm, bn), out_block)
