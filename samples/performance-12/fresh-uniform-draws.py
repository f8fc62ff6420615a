# Draws the operands uniform on [0, 1) instead of standard normal: all-positive sums have no cancellation,
# so bfloat16 operands' error relative to the largest entry shrinks toward the TF32 regime.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=0
# tier: nightly
# %% solutions
# %% replace product_tolerance
def product_tolerance(matmul):
    rng = np.random.default_rng(0)
    a = rng.random((128, 128), dtype=np.float32)
    b = rng.random((128, 128), dtype=np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = float(np.max(np.abs(np.asarray(matmul(a, b), np.float64) - exact)) / np.max(np.abs(exact)))
    precision = "float32" if error < 1e-5 else "TF32" if error < 1e-3 else "bfloat16 passes"
    tolerance = {"float32": 1e-5, "TF32": 4e-3, "bfloat16 passes": 3e-2}[precision]
    return {"relative_error": error, "precision": precision, "rtol": tolerance, "atol": tolerance}
