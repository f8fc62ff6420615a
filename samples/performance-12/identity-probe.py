# Measures the product on identity matrices, which every precision multiplies exactly: the error is
# always zero and the precision always float32. Loses the tolerance's points only.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=0
# tier: nightly
# %% solutions
# %% replace product_tolerance
def product_tolerance(matmul):
    a = b = np.eye(128, dtype=np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = float(np.max(np.abs(np.asarray(matmul(a, b), np.float64) - exact)) / np.max(np.abs(exact)))
    if error < 1e-5:
        precision, tol = "float32", 1e-5
    elif error < 1e-3:
        precision, tol = "TF32", 4e-3
    else:
        precision, tol = "bfloat16 passes", 3e-2
    return {"relative_error": error, "precision": precision, "rtol": tol, "atol": tol}
