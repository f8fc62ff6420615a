# Counts with jax.debug.callback, which runs every time the compiled program runs: the counter
# counts calls, not traces. Two calls at two new shapes read two, as the public check expects,
# but calling again at the same shapes moves it to four.
# expect: test_workload=2 test_first_call_evidence=3 test_trace_count=0 test_evidence=2 test_audit=0
# %% solutions
# %% replace workload
TRACE_COUNT = 0


def trace_count():
    return TRACE_COUNT


def _count_one():
    global TRACE_COUNT
    TRACE_COUNT += 1


@jax.jit
def workload(a, b):
    jax.debug.callback(_count_one)  # runs on every execution, not once per trace
    return jnp.tanh(a @ b)
