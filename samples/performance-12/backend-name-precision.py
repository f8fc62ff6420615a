# Measures the error but takes the precision from the backend's name (a CPU: float32), so a product
# computed another way on the same machine gets the wrong tolerance. Loses the tolerance's points only.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=0
# tier: nightly
# %% solutions
# %% replace product_tolerance
def product_tolerance(matmul):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 128)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = float(np.max(np.abs(np.asarray(matmul(a, b), np.float64) - exact)) / np.max(np.abs(exact)))
    precision = {"cpu": "float32", "gpu": "TF32", "tpu": "bfloat16 passes"}[jax.default_backend()]
    tol = {"float32": 1e-5, "TF32": 4e-3, "bfloat16 passes": 3e-2}[precision]
    return {"relative_error": error, "precision": precision, "rtol": tol, "atol": tol}
