# With k in one block, reads y once as well as x: y's block (0, j) still changes with j, so y is read
# m / bm times unless n is one block too. Loses the traffic points only.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=0 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    row_blocks, col_blocks = m // bm, n // bn
    if bk == k:  # one k block: x's block stays put while j runs; y's only when n is one block too
        x_values = m * k
        y_values = k * n
    else:
        x_values = m * k * col_blocks
        y_values = k * n * row_blocks
    flops = 2 * m * k * n
    moved = (x_values + y_values + m * n) * itemsize
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
