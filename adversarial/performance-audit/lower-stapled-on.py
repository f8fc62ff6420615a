# A workload that never runs a compiled program for the calls the checks make: a plain Python
# function that computes tanh(a @ b) with NumPy on the host and, only when JAX traces it, hands the
# tracers to a jitted twin (whose body counts the traces), with the twin's `lower` and `trace`
# stapled on. The workload check took `.lower` as the proof of jax.jit, and the export probe
# exported any object with `lower` and `trace` as it was (the twin's program): 10/10, unflagged,
# every call the audit timed running NumPy. check_workload now asks for jax.jit's own type (the
# stand-in's class, named by the student's process), and the export probes refuse a function that
# carries a `lower` or `trace` of its own (jax.jit copies a function's attributes onto what it
# returns, so jitting it would not do): the workload, the evidence and the audit lose their points.
# The counter keeps its own (the twin's `lower` traces, and counts, where jit would).
# tier: nightly
# expect: test_workload=0 test_first_call_evidence=3 test_trace_count=2 test_evidence=0 test_audit=0
# %% solutions
# %% replace workload
TRACE_COUNT = 0  # how many times JAX has traced the Python body of workload


def trace_count():
    return TRACE_COUNT


@jax.jit
def _twin(a, b):
    global TRACE_COUNT
    TRACE_COUNT += 1
    return jnp.tanh(a @ b)


def workload(a, b):
    if isinstance(a, jax.core.Tracer) or isinstance(b, jax.core.Tracer):
        return _twin(a, b)
    _twin.lower(a, b)  # traces (and counts) where jit would, compiles and runs nothing
    return np.tanh(np.asarray(a) @ np.asarray(b))


workload.lower, workload.trace = _twin.lower, _twin.trace
