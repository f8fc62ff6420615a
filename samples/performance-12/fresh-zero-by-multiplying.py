# Clears the accumulator without a branch, by multiplying it by 0 at the first k step: NaN times 0 is NaN,
# so an output block that starts as NaN (the interpreter's, or a TPU's leftover bits) stays NaN.
# expect: test_matmul_kernel=0 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    keep = (pl.program_id(2) > 0).astype(jnp.float32)
    o_ref[...] = o_ref[...] * keep + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
