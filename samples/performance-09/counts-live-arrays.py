# Reads the statistics right, but counts jax.live_arrays() of the whole process instead of the
# arrays it is handed (the task says the caller decides what to count). The grader holds arrays
# beside the ones it hands over in every run, so the two never coincide. Loses the live-memory
# points only.
# expect: test_memory_breakdown=3 test_live_memory=0 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace live_memory
def live_memory(arrays, device):
    arrays = jax.live_arrays()  # every array of this process, not the ones given
    result = {"arrays": len(arrays), "bytes": sum(int(a.nbytes) for a in arrays)}
    try:
        stats = device.memory_stats()
        why = f"memory_stats() is None: the {device.platform} backend keeps no allocator statistics"
    except Exception as error:
        stats, why = None, f"memory_stats() raised {type(error).__name__}"
    missing = {}
    for key in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit"):
        value = None if stats is None else stats.get(key)
        result[key] = None if value is None else int(value)
        if value is None:
            missing[key] = why if stats is None else f"the statistics have no {key!r}"
    result["missing"] = missing
    return result
