# Correct in other idioms: the accumulator reset with jnp.where (the select keeps no old value at the
# first k step, NaN or not), BlockSpecs by keyword with named index maps and pl.cdiv for the grid, the
# traffic counted over the grid's index arrays (a copy wherever a block index changes), the regime
# found by walking the table. Full marks.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=2
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    start = jnp.where(pl.program_id(2) == 0, jnp.zeros(o_ref.shape, o_ref.dtype), o_ref[...])
    o_ref[...] = start + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    def x_block(i, j, kk):
        return i, kk

    def y_block(i, j, kk):
        return kk, j

    def out_block(i, j, kk):
        return i, j

    grid = (pl.cdiv(m, bm), pl.cdiv(n, bn), pl.cdiv(k, bk))
    return (grid,
            [pl.BlockSpec(block_shape=(bm, bk), index_map=x_block), pl.BlockSpec(block_shape=(bk, bn), index_map=y_block)],
            pl.BlockSpec(block_shape=(bm, bn), index_map=out_block))
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    # The grid in its order (k fastest) as index arrays; a block is copied wherever its index changes.
    i, j, kk = (axis.ravel() for axis in np.indices((m // bm, n // bn, k // bk)))

    def copies(*index):
        picked = np.stack(index, axis=1)
        return 1 + int(np.any(picked[1:] != picked[:-1], axis=1).sum())

    moved = (copies(i, kk) * bm * bk + copies(kk, j) * bk * bn + copies(i, j) * bm * bn) * itemsize
    flops = 2 * m * k * n
    return dict(flops=flops, bytes=moved, intensity=flops / moved)
# %% replace product_tolerance
def product_tolerance(matmul):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2))
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    error = np.abs(np.asarray(matmul(a, b), np.float64) - exact).max() / np.abs(exact).max()
    for bound, precision, tol in ((1e-5, "float32", 1e-5), (1e-3, "TF32", 4e-3), (math.inf, "bfloat16 passes", 3e-2)):
        if error < bound:
            return {"relative_error": float(error), "precision": precision, "rtol": tol, "atol": tol}
