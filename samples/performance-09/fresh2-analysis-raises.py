# Handles an analysis that is None but not one that raises (the text: a backend without it returns None or
# raises; either way the numbers are missing).
# expect: test_memory_breakdown=0 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace memory_breakdown
def memory_breakdown(compiled):
    stats = compiled.memory_analysis()
    names = {"argument_bytes": "argument_size_in_bytes", "output_bytes": "output_size_in_bytes",
             "temp_bytes": "temp_size_in_bytes", "alias_bytes": "alias_size_in_bytes",
             "peak_bytes": "peak_memory_in_bytes"}
    result = {key: getattr(stats, name, None) for key, name in names.items()}
    missing = {key: "the compiler did not give it" for key, value in result.items() if value is None}
    parts = [result[k] for k in ("argument_bytes", "output_bytes", "temp_bytes", "alias_bytes")]
    result["total_bytes"] = None if None in parts else parts[0] + parts[1] + parts[2] - parts[3]
    if result["total_bytes"] is None:
        missing["total_bytes"] = "one of its parts is missing"
    result["missing"] = missing
    return result
