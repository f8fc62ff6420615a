# Reports a missing memory number as 0, as a dashboard would: a backend without the analysis then
# looks like one whose programs need no memory. Passes the public checks' complete program, not the
# stand-ins with None, errors and absent attributes. Loses the breakdown points only.
# expect: test_memory_breakdown=0 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace memory_breakdown
def memory_breakdown(compiled):
    try:
        stats = compiled.memory_analysis()
    except Exception:
        stats = None
    read = lambda name: int(getattr(stats, name, 0) or 0) if stats is not None else 0
    result = {"argument_bytes": read("argument_size_in_bytes"), "output_bytes": read("output_size_in_bytes"),
              "temp_bytes": read("temp_size_in_bytes"), "alias_bytes": read("alias_size_in_bytes")}
    result["total_bytes"] = (result["argument_bytes"] + result["output_bytes"] + result["temp_bytes"]
                             - result["alias_bytes"])
    result["peak_bytes"] = read("peak_memory_in_bytes")
    result["missing"] = {} if stats is not None else {key: "no analysis" for key in result}
    return result
