# make_update() returns a function that runs the update without donating anything (the old params
# stay alive beside the new ones, every step), carrying the `lower` and `trace` of a donating twin.
# The public check reads the twin's lowered text; the export probe took any object with `lower` and
# `trace` as jitted and exported it as it was, the twin's program with the params donated (and
# jitting it first would not have helped: jax.jit copies a function's attributes onto what it
# returns, and jax.export reads the program through `trace`): the check passed, 21/21 with the
# solution's other cells. The export probes now refuse a function, jitted or not, that carries a
# `lower` or `trace` of its own (kernel/probes/programs.py:as_jitted, used by memory.py:export_update
# and sharding.py:export_gradient). Loses the donated update's points only.
# tier: nightly
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=0 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# %% solutions
# %% replace donated_update
def make_update():
    donating, kept = jax.jit(sgd, donate_argnums=0), jax.jit(sgd)

    def update(params, grads, lr):
        return kept(params, grads, lr)
    update.lower, update.trace = donating.lower, donating.trace
    return update
