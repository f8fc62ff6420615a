# Rounds the operands to bfloat16 itself (float32 sums), as a TPU does by default. On the
# identity that changes nothing (0 and 1 are exact in bfloat16), so the public check passes;
# on random inputs where the backend multiplies float32 (the grader's CPU) the result is off by
# about 1e-2, beyond the tolerance of the precision in use (1e-5). It loses the workload's
# points, and the end-to-end audit that checks the workload again.
# expect: test_workload=0 test_first_call_evidence=3 test_trace_count=2 test_evidence=2 test_audit=0
# tier: nightly
# %% solutions
# %% replace workload
TRACE_COUNT = 0


def trace_count():
    return TRACE_COUNT


@jax.jit
def workload(a, b):
    global TRACE_COUNT
    TRACE_COUNT += 1
    return jnp.tanh(jnp.matmul(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), preferred_element_type=jnp.float32))
