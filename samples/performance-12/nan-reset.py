# Never zeroes the accumulator but replaces the NaN the interpreter fills an unwritten block with:
# right in interpret mode, wrong on a TPU, whose fast memory holds ordinary numbers. The grader
# starts output blocks as such numbers too. Loses the kernel body's points only.
# expect: test_matmul_kernel=0 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    so_far = o_ref[...]
    so_far = jnp.where(jnp.isnan(so_far), 0.0, so_far)
    o_ref[...] = so_far + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
