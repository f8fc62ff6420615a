# Asks the compiler for the flop count instead of counting by hand: the estimate is then checked
# against itself. It agrees on the lesson's product, but not where XLA rewrites the product (a
# dimension of 1). Loses the hand-count points only.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=0
# %% solutions
# %% replace hand_count
def matmul_flops(m, k, n):
    a = jax.ShapeDtypeStruct((m, k), jnp.float32)
    b = jax.ShapeDtypeStruct((k, n), jnp.float32)
    return int(read_program(lambda p, q: p @ q, a, b)["estimates"]["flops"])
