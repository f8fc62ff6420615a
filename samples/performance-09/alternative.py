# A different correct approach: the statistics read in a comprehension with hasattr, the live
# statistics through dict.get on an empty dict, the params donated by name, the donation lowered
# apart and run through the jit's own call path, the sweep with statistics.median and the
# .block_until_ready() method, the fit with np.linalg.lstsq, the cache with the default minimum
# entry size, the key compared field by field, and remat through jax.remat with prevent_cse=False.
# Full marks.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# %% replace memory_breakdown
def memory_breakdown(compiled):
    try:
        stats = compiled.memory_analysis()
    except Exception as error:  # a backend without the analysis
        stats, reason = None, f"memory_analysis() failed: {error!r}"
    else:
        reason = "memory_analysis() gave nothing (None)"
    names = {"argument_bytes": "argument_size_in_bytes", "output_bytes": "output_size_in_bytes",
             "temp_bytes": "temp_size_in_bytes", "alias_bytes": "alias_size_in_bytes"}
    found = {key: (int(getattr(stats, name)) if stats is not None and hasattr(stats, name)
                   and getattr(stats, name) is not None else None) for key, name in names.items()}
    missing = {key: (reason if stats is None else f"no {names[key]} in the statistics")
               for key, value in found.items() if value is None}
    if missing:
        found["total_bytes"] = None
        missing["total_bytes"] = "some of its parts are missing"
    else:
        found["total_bytes"] = sum(found[k] for k in ("argument_bytes", "output_bytes", "temp_bytes")) - found["alias_bytes"]
    peak = getattr(stats, "peak_memory_in_bytes", None) if stats is not None else None
    found["peak_bytes"] = None if peak is None else int(peak)
    if peak is None:
        missing["peak_bytes"] = reason if stats is None else "no peak_memory_in_bytes in the statistics"
    return {**found, "missing": missing}
# %% replace live_memory
def live_memory(arrays, device):
    count, total = 0, 0
    for array in arrays:
        count += 1
        total += array.nbytes
    try:
        stats = device.memory_stats()
    except Exception as error:
        stats, reason = None, f"memory_stats() raised {error!r}"
    else:
        reason = "this backend has no memory statistics (memory_stats() is None)"
    table = stats if stats is not None else {}
    missing = {key: (reason if stats is None else "not among the statistics")
               for key in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit") if table.get(key) is None}
    return {"arrays": count, "bytes": int(total), "bytes_in_use": table.get("bytes_in_use"),
            "peak_bytes_in_use": table.get("peak_bytes_in_use"), "bytes_limit": table.get("bytes_limit"),
            "missing": missing}
# %% replace donated_update
def make_update():
    return jax.jit(sgd, donate_argnames="params")
# %% replace donation_evidence
def donation_evidence(fn, args, donate_argnums):
    jitted = jax.jit(fn, donate_argnums=donate_argnums)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = jitted.lower(*args)
    compiled = lowered.compile()
    alias = compiled.memory_analysis().alias_size_in_bytes
    result = compiled(*args)
    jax.block_until_ready(result)
    return {"alias_bytes": alias, "deleted": [arg.is_deleted() for arg in args],
            "not_usable": any("not usable" in str(warning.message) for warning in caught)}
# %% replace transfer_sweep
import statistics


def transfer_sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=time_call):
    rows = []
    for size in sizes:
        host = np.random.default_rng(size).random(size // 4, dtype=np.float32)
        put_times = []
        for _ in range(repeats):
            put_times.append(timer(put, host))
        get_times = []
        for _ in range(repeats):
            device = put(host)
            device.block_until_ready()
            get_times.append(timer(get, device))
        rows.append(dict(bytes=size, put_seconds=statistics.median(put_times), get_seconds=statistics.median(get_times)))
    return rows
# %% replace transfer_fit
def fit_transfer(nbytes, seconds):
    x, y = np.asarray(nbytes, dtype=np.float64), np.asarray(seconds, dtype=np.float64)
    design = np.column_stack([np.ones_like(x), x]) / y[:, None]  # each row relative to its own time
    (fixed, per_byte), *_ = np.linalg.lstsq(design, np.ones_like(y), rcond=None)
    return {"fixed_seconds": float(fixed), "bytes_per_second": float(1 / per_byte)}
# %% replace cache_settings
def cache_settings(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir, "jax_persistent_cache_min_compile_time_secs": 0}
# %% replace cache_invalidation
def cache_hit(first, second):
    if list(first["shape"]) != list(second["shape"]) or first["dtype"] != second["dtype"]:
        return False
    if first["jax_version"] != second["jax_version"]:
        return False
    from jax._src import cache_key
    kept = lambda flags: sorted(flag for flag in flags
                                if flag.partition("=")[0] not in cache_key.xla_flags_to_exclude_from_cache_key)
    return kept(first["xla_flags"]) == kept(second["xla_flags"])
# %% replace remat_loss
def remat_loss(policy):
    step = layer if policy is None else jax.remat(layer, policy=policy, prevent_cse=False)

    def loss(weights, x):
        final, _ = jax.lax.scan(step, x, weights)
        return (final ** 2).mean()

    return loss
