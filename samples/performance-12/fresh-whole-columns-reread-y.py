# Applies the one-k-block rule to x but keeps reading y m / bm times even when n is one block too, where
# y's block (0, 0) never changes and y is read once.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=0 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    flops = 2 * m * k * n
    if bk == k:
        values = m * k + k * n * (m // bm) + m * n
    else:
        values = m * k * (n // bn) + k * n * (m // bm) + m * n
    return {"flops": flops, "bytes": values * itemsize, "intensity": flops / (values * itemsize)}
