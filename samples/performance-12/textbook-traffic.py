# Counts every value as moved once, performance-07's textbook count, whatever the blocks: the
# re-reads of x and y that tiling costs are missing. Loses the traffic's points only.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=0 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    flops = 2 * m * k * n
    moved = (m * k + k * n + m * n) * itemsize
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
