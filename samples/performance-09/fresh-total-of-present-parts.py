# Sums the parts the analysis has into total_bytes when one is missing: the task says the total is
# missing (None) when any of the four is. Loses the breakdown's points only.
# expect: test_memory_breakdown=0 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace memory_breakdown
def memory_breakdown(compiled):
    attributes = {"argument_bytes": "argument_size_in_bytes", "output_bytes": "output_size_in_bytes",
                  "temp_bytes": "temp_size_in_bytes", "alias_bytes": "alias_size_in_bytes",
                  "peak_bytes": "peak_memory_in_bytes"}
    try:
        stats = compiled.memory_analysis()
        why = "this backend gives no memory analysis (memory_analysis() is None)"
    except Exception as exc:  # a backend without the analysis may raise
        stats, why = None, f"memory_analysis() raised {type(exc).__name__}"
    result, missing = {}, {}
    for key, attribute in attributes.items():
        value = None if stats is None else getattr(stats, attribute, None)
        result[key] = value
        if value is None:
            missing[key] = why if stats is None else f"the analysis has no {attribute}"
    parts = [result[key] for key in ("argument_bytes", "output_bytes", "temp_bytes", "alias_bytes")]
    if all(part is None for part in parts):
        result["total_bytes"] = None
        missing["total_bytes"] = "the analysis is missing"
    else:
        present = [part or 0 for part in parts]
        result["total_bytes"] = present[0] + present[1] + present[2] - present[3]
    result["missing"] = missing
    return result
