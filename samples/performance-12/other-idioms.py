# Correct in still other idioms: a body that writes o_ref[:, :] through jnp.matmul under a pl.when
# with program_id by keyword, the specs built in a loop as a tuple, float arithmetic for the
# traffic, and the regime by bisect over the boundaries. Full marks.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    first = pl.program_id(axis=2) == 0

    @pl.when(first)
    def _():
        o_ref[:, :] = jnp.zeros_like(o_ref[:, :])

    o_ref[:, :] = o_ref[:, :] + jnp.matmul(x_ref[:, :], y_ref[:, :], preferred_element_type=jnp.float32)
# %% replace tiling
def tiling(m, k, n, bm, bn, bk):
    maps = {"x": ((bm, bk), lambda i, j, kk: (i, kk)), "y": ((bk, bn), lambda i, j, kk: (kk, j)),
            "out": ((bm, bn), lambda i, j, kk: (i, j))}
    specs = {name: pl.BlockSpec(shape, index) for name, (shape, index) in maps.items()}
    return (m // bm, n // bn, k // bk), (specs["x"], specs["y"]), specs["out"]
# %% replace tiled_traffic
def tiled_traffic(m, k, n, bm, bn, bk, itemsize):
    one_k = bk == k  # x's block then stays put while j runs; y's too if n is one block
    x_reads = m * k * (1.0 if one_k else n / bn)
    y_reads = k * n * (1.0 if one_k and bn == n else m / bm)
    result = {"flops": 2.0 * m * k * n, "bytes": float(itemsize) * (x_reads + y_reads + m * n)}
    result["intensity"] = result["flops"] / result["bytes"]
    return result
# %% replace product_tolerance
def product_tolerance(matmul):
    import bisect

    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 128)).astype(np.float32)
    exact = np.einsum("ik,kj->ij", a.astype(np.float64), b.astype(np.float64))
    got = np.array(matmul(a, b), dtype=np.float64)
    error = float(np.max(np.abs(got - exact)) / np.max(np.abs(exact)))
    regime = bisect.bisect_right([1e-5, 1e-3], error)
    precision = ("float32", "TF32", "bfloat16 passes")[regime]
    tol = (1e-5, 4e-3, 3e-2)[regime]
    return {"relative_error": error, "precision": precision, "rtol": tol, "atol": tol}
