# Reads y once wherever n is one block (bn = n), whatever k: right where k is one block too, but with
# k in several blocks y's block (kk, 0) changes at every step and y is read m / bm times, as the
# lesson's rule says. Loses the traffic points only.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=0 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    x_reads = n // bn if bk < k else 1
    y_reads = 1 if bn == n else m // bm
    flops = 2 * m * k * n
    moved = (m * k * x_reads + k * n * y_reads + m * n) * itemsize
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
