# Handles memory_stats() being None but reads its keys by subscript: a backend that leaves a key out
# (the task: "A backend may also leave a key out, or raise") makes it raise. Loses the live-memory points.
# expect: test_memory_breakdown=3 test_live_memory=0 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% solutions
# %% replace live_memory
def live_memory(arrays, device):
    arrays = list(arrays)
    result = {"arrays": len(arrays), "bytes": sum(int(a.nbytes) for a in arrays)}
    missing = {}
    try:
        stats = device.memory_stats()
        why = f"{getattr(device, 'platform', 'this device')} keeps no allocator statistics (memory_stats() is None)"
    except Exception as exc:
        stats, why = None, f"memory_stats() raised {type(exc).__name__}"
    for key in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit"):
        value = stats[key] if isinstance(stats, dict) else None
        result[key] = value
        if value is None:
            missing[key] = why if not isinstance(stats, dict) else f"memory_stats() has no {key!r}"
    result["missing"] = missing
    return result
