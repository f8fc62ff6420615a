# A workload that is right for the lesson's 64x32 @ 32x16 inputs only (it slices to those
# shapes): the public check passes, fresh shapes fail. Loses the workload cell only.
# expect: test_workload=0 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    out = jnp.tanh(x[:64, :32] @ w[:32, :16])
    return jnp.pad(out, ((0, max(0, x.shape[0] - 64)), (0, max(0, w.shape[1] - 16))))[: x.shape[0], : w.shape[1]]
