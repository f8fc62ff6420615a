# Rounds the operands to bfloat16 itself (float32 sums), as a TPU does by default. Where the
# backend multiplies float32 (the grader's CPU), the result is off by about 1e-2: the tolerance
# follows the precision in use (1e-5 here), not the loosest one. Loses the workload cell only.
# expect: test_workload=0 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    product = jnp.matmul(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)
    return jnp.tanh(product)
