# Counts the shapes workload has seen, in a set, instead of counting traces: the first call at
# 16x16 and 32x32 reads two, as the public check expects, but after jax.clear_caches() JAX traces
# again at a shape the set already holds and the counter stays put. It loses the trace-count
# points, and the end-to-end audit (whose own count, after a clear, reads zero).
# expect: test_workload=2 test_first_call_evidence=3 test_trace_count=0 test_evidence=2 test_audit=0
# tier: nightly
# %% solutions
# %% replace workload
_shapes_seen = set()


def trace_count():
    return len(_shapes_seen)


@jax.jit
def workload(a, b):
    _shapes_seen.add((a.shape, b.shape))  # runs while tracing, but remembers shapes, not traces
    return jnp.tanh(a @ b)
