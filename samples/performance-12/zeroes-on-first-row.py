# Zeroes the accumulator at the grid's first axis (pl.program_id(0) == 0) instead of its last: row
# block 0 is zeroed at every k step, the others never. Loses the kernel body's points only.
# expect: test_matmul_kernel=0 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(0) == 0)
    def _zero():
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
