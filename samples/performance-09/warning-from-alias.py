# Never records the warning: it calls a donation "not usable" when the alias bytes are 0. Right for
# the public checks' sum, wrong where XLA drops a donation silently (a bfloat16 result of a float32
# argument: no warning) and where one of two donated buffers is used. Loses the evidence points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=0 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace donation_evidence
def donation_evidence(fn, args, donate_argnums):
    compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
    alias = int(compiled.memory_analysis().alias_size_in_bytes)
    jax.block_until_ready(compiled(*args))
    return {"alias_bytes": alias, "deleted": [bool(a.is_deleted()) for a in args],
            "not_usable": bool(donate_argnums) and alias == 0}
