# Counts the output block as written back at every k step: it stays in fast memory while k runs
# and is written once. Loses the traffic's points only.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=0 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    flops = 2 * m * k * n
    moved = (m * k * (n // bn) + k * n * (m // bm) + m * n * (k // bk)) * itemsize
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
