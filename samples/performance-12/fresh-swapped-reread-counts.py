# Reads x once per row block and y once per column block (each operand re-read along its own axis), where
# x is re-read for each of the n / bn column blocks and y for each of the m / bm row blocks.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=0 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    flops = 2 * m * k * n
    if bk == k:
        x_reads, y_reads = 1, 1 if bn == n else m // bm
    else:
        x_reads, y_reads = m // bm, n // bn
    moved = (m * k * x_reads + k * n * y_reads + m * n) * itemsize
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
