# Correct, written from the text alone: the first k step sets the accumulator and the others add to it
# (two pl.when branches); named index maps; the traffic by cases; the matrices drawn as float32.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    partial = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
    first = pl.program_id(2) == 0

    @pl.when(first)
    def _start():  # the first k step sets the accumulator: nothing earlier is in it
        o_ref[...] = partial

    @pl.when(jnp.logical_not(first))
    def _accumulate():
        o_ref[...] += partial
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    def x_block(i, j, kk):
        return i, kk

    def y_block(i, j, kk):
        return kk, j

    def out_block(i, j, kk):
        return i, j

    grid = (m // bm, n // bn, k // bk)
    return grid, [pl.BlockSpec((bm, bk), x_block), pl.BlockSpec((bk, bn), y_block)], pl.BlockSpec((bm, bn), out_block)
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    row_blocks, col_blocks = m // bm, n // bn
    if bk == k:  # one k block: x's block stays put while j runs; y's only when n is one block too
        x_values = m * k
        y_values = k * n if bn == n else k * n * row_blocks
    else:
        x_values = m * k * col_blocks
        y_values = k * n * row_blocks
    flops = 2 * m * k * n
    moved = (x_values + y_values + m * n) * itemsize
    return {"flops": flops, "bytes": moved, "intensity": flops / moved}
# %% replace product_tolerance
def product_tolerance(matmul):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 128), dtype=np.float32)
    got = np.asarray(matmul(a, b), dtype=np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = float(np.max(np.abs(got - exact)) / np.max(np.abs(exact)))
    if error < 1e-5:
        precision, tolerance = "float32", 1e-5
    elif error < 1e-3:
        precision, tolerance = "TF32", 4e-3
    else:
        precision, tolerance = "bfloat16 passes", 3e-2
    return {"relative_error": error, "precision": precision, "rtol": tolerance, "atol": tolerance}
