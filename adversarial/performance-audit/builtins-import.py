# A correct notebook whose workload cell takes __import__ out of the builtins' namespace
# (`vars(__builtins__)[name]`, the name built at run time) and imports the course's agent and probe
# package with it, keeping them for later. The scan followed `builtins` but not `__builtins__`, the
# same module under the name every namespace holds, so it saw no importer and no module. Nothing
# is forged here; what was reached is what a forger needs. Evidence, not a verdict: full marks.
# reason: code reaches a module by a path the scan cannot read
# tier: nightly
# expect: test_workload=2 test_first_call_evidence=3 test_trace_count=2 test_evidence=2 test_audit=1
# %% solutions
# %% replace workload
TRACE_COUNT = 0  # how many times JAX has traced the Python body of workload


def trace_count():
    return TRACE_COUNT


@jax.jit
def workload(a, b):
    global TRACE_COUNT
    TRACE_COUNT += 1
    return jnp.tanh(a @ b)


_importer = vars(__builtins__)["".join(reversed("__tropmi__"))]
_reached = [_importer(".".join(word[::-1] for word in words), fromlist=["x"])
            for words in (("esruocfrep", "lenrek", "tnega"), ("esruocfrep", "lenrek", "seborp"))]
