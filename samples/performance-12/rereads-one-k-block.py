# Counts x as read n / bn times and y m / bm times whatever the blocks: right while k has several
# blocks, but where k is one block (bk = k) x's block (i, 0) stays put while j runs and is read once
# (and y's too where n is one block), so it over-counts. Loses the traffic's points only.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=0 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    flops = 2 * m * k * n
    moved = (m * k * (n // bn) + k * n * (m // bm) + m * n) * itemsize
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
