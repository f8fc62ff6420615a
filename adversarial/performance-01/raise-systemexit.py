# A correct notebook that raises SystemExit in a cell.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

raise SystemExit("done")
