# Takes the largest elementwise relative error, max(|got - exact| / |exact|), not the text's
# max |got - exact| / max |exact|: an entry of the product near zero makes it huge. Loses the tolerance.
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=0
# tier: nightly
# %% solutions
# %% replace product_tolerance
def product_tolerance(matmul):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 128), dtype=np.float32)
    got = np.asarray(matmul(a, b), dtype=np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = float(np.max(np.abs(got - exact) / np.abs(exact)))
    if error < 1e-5:
        precision, tolerance = "float32", 1e-5
    elif error < 1e-3:
        precision, tolerance = "TF32", 4e-3
    else:
        precision, tolerance = "bfloat16 passes", 3e-2
    return {"relative_error": error, "precision": precision, "rtol": tolerance, "atol": tolerance}
