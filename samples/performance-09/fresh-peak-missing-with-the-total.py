# Calls the peak missing whenever the total is: the task says the peak is the compiler's own number,
# missing only when it is. Loses the breakdown's points only.
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
    if any(part is None for part in parts):
        result["total_bytes"] = None
        missing["total_bytes"] = "one of argument, output, temp and alias bytes is missing"
    else:
        result["total_bytes"] = parts[0] + parts[1] + parts[2] - parts[3]
    if result["total_bytes"] is None:
        result["peak_bytes"] = None
        missing["peak_bytes"] = "the total is missing"
    result["missing"] = missing
    return result
