# Counts the arrays right, and reads a device without statistics (the CPU's memory_stats() is
# None) as zero bytes in use: the CPU looks empty instead of unmeasured. Loses the live-memory
# points only.
# expect: test_memory_breakdown=3 test_live_memory=0 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace live_memory
def live_memory(arrays, device):
    arrays = list(arrays)
    try:
        stats = device.memory_stats() or {}
    except Exception:
        stats = {}
    return {"arrays": len(arrays), "bytes": sum(int(a.nbytes) for a in arrays),
            "bytes_in_use": stats.get("bytes_in_use", 0), "peak_bytes_in_use": stats.get("peak_bytes_in_use", 0),
            "bytes_limit": stats.get("bytes_limit", 0), "missing": {}}
