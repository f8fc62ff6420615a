# Zeroes the output at the grid's very first point (every program id 0), reading "the first step" as the
# first step of the whole grid: only output block (0, 0) is set; every other block keeps what it held.
# expect: test_matmul_kernel=0 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    first = (pl.program_id(0) == 0) & (pl.program_id(1) == 0) & (pl.program_id(2) == 0)

    @pl.when(first)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
