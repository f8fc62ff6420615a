# Records warnings around compile() alone and lowers before: JAX warns when it lowers, so the
# warning is never recorded. Loses the donation evidence's points only.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=0 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace donation_evidence
def donation_evidence(fn, args, donate_argnums):
    jitted = jax.jit(fn, donate_argnums=donate_argnums)
    lowered = jitted.lower(*args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = lowered.compile()
    alias = compiled.memory_analysis().alias_size_in_bytes
    jax.block_until_ready(compiled(*args))
    return {"alias_bytes": alias, "deleted": [a.is_deleted() for a in args],
            "not_usable": any("not usable" in str(w.message) for w in caught)}
