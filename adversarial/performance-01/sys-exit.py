# A correct notebook that calls sys.exit() in a cell: IPython stops the cell, not the kernel.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
import sys

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

sys.exit(0)
