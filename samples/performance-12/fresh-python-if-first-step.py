# Sets the accumulator with a Python if on pl.program_id(2) == 0 instead of pl.when: the grid index is
# traced, so the if cannot read it. Loses the kernel's points only.
# expect: test_matmul_kernel=0 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace matmul_kernel
def matmul_kernel(x_ref, y_ref, o_ref):
    partial = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
    first = pl.program_id(2) == 0

    if first:
        o_ref[...] = partial
    else:
        o_ref[...] += partial
