# Takes tanh of the first matrix, then multiplies: tanh(a) @ b. On the identity the two agree
# (tanh(I) @ I = tanh(I @ I)), so the public check passes; on any other inputs they differ. The
# hidden check's random inputs catch it: it loses the workload's points, and the end-to-end
# audit that checks the workload again.
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
    return jnp.tanh(a) @ b
