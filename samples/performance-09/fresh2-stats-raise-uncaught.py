# Reads memory_stats() for None but lets a raising one through (the text: a backend may return None, leave a key
# out, or raise).
# expect: test_memory_breakdown=3 test_live_memory=0 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace live_memory
def live_memory(arrays, device):
    stats = device.memory_stats() or {}
    result = {"arrays": len(arrays), "bytes": sum(a.nbytes for a in arrays), "missing": {}}
    for key in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit"):
        result[key] = stats.get(key)
        if result[key] is None:
            result["missing"][key] = "the device keeps no such statistic"
    return result
