# A student's own idioms: a table of attribute names read with getattr, the statistics read in one loop, the
# params donated by name, the compiled program called directly, the fit as lstsq of rows divided by their time
# (target 1), the key built as a tuple, the scan's body chosen before the loss is defined.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% replace memory_breakdown
COMPILER_FIELDS = {"argument_bytes": "argument_size_in_bytes", "output_bytes": "output_size_in_bytes",
                   "temp_bytes": "temp_size_in_bytes", "alias_bytes": "alias_size_in_bytes",
                   "peak_bytes": "peak_memory_in_bytes"}


def memory_breakdown(compiled):
    try:
        stats = compiled.memory_analysis()
        absent = "memory_analysis() returned None on this backend"
    except Exception as error:  # a backend without the analysis may raise
        stats, absent = None, f"memory_analysis() raised {type(error).__name__}: {error}"
    result, missing = {}, {}
    for key, attribute in COMPILER_FIELDS.items():
        result[key] = None if stats is None else getattr(stats, attribute, None)
        if result[key] is None:
            missing[key] = absent if stats is None else f"this jaxlib's statistics have no {attribute}"
    four = [result[k] for k in ("argument_bytes", "output_bytes", "temp_bytes", "alias_bytes")]
    if None in four:
        result["total_bytes"] = None
        missing["total_bytes"] = "needs all four of argument, output, temp and alias bytes"
    else:
        result["total_bytes"] = four[0] + four[1] + four[2] - four[3]
    result["missing"] = missing
    return result
# %% replace live_memory
def live_memory(arrays, device):
    arrays = list(arrays)
    result = {"arrays": len(arrays), "bytes": sum(int(a.nbytes) for a in arrays), "missing": {}}
    try:
        stats = device.memory_stats()
        why = "memory_stats() returned None: this backend keeps no allocator statistics"
    except Exception as error:
        stats, why = None, f"memory_stats() raised {type(error).__name__}"
    for key in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit"):
        value = stats.get(key) if isinstance(stats, dict) else None
        result[key] = value
        if value is None:
            result["missing"][key] = why if stats is None else f"memory_stats() has no {key!r}"
    return result
# %% replace donated_update
def make_update():
    return jax.jit(sgd, donate_argnames=("params",))
# %% replace donation_evidence
def donation_evidence(fn, args, donate_argnums):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
    jax.block_until_ready(compiled(*args))
    return {"alias_bytes": compiled.memory_analysis().alias_size_in_bytes,
            "deleted": [bool(a.is_deleted()) for a in args],
            "not_usable": any("donated buffers were not usable" in str(w.message) for w in caught)}
# %% replace transfer_sweep
def transfer_sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=time_call):
    rows = []
    for size in sizes:
        host = np.arange(size // 4, dtype=np.float32)
        put_times = [timer(put, host) for _ in range(repeats)]
        get_times = []
        for _ in range(repeats):
            fresh = jax.block_until_ready(put(host))  # untimed, and landed before the clock starts
            get_times.append(timer(get, fresh))
        rows.append({"bytes": size, "put_seconds": float(np.median(put_times)),
                     "get_seconds": float(np.median(get_times))})
    return rows
# %% replace transfer_fit
def fit_transfer(nbytes, seconds):
    x = np.asarray(nbytes, dtype=np.float64)
    t = np.asarray(seconds, dtype=np.float64)
    rows = np.column_stack([np.ones_like(x), x]) / t[:, None]  # each row, and its time, over its time
    (fixed, slope), *_ = np.linalg.lstsq(rows, np.ones_like(t), rcond=None)
    return {"fixed_seconds": float(fixed), "bytes_per_second": float(1.0 / slope)}
# %% replace cache_settings
def cache_settings(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir,
            "jax_persistent_cache_min_compile_time_secs": 0,
            "jax_persistent_cache_min_entry_size_bytes": -1}
# %% replace cache_invalidation
from jax._src.cache_key import xla_flags_to_exclude_from_cache_key


def cache_hit(first, second):
    def key(compile_):
        kept = [flag for flag in compile_["xla_flags"]
                if flag.split("=", 1)[0] not in xla_flags_to_exclude_from_cache_key]
        return tuple(compile_["shape"]), compile_["dtype"], tuple(sorted(kept)), compile_["jax_version"]
    return key(first) == key(second)
# %% replace remat_loss
def remat_loss(policy):
    body = layer if policy is None else jax.checkpoint(layer, policy=policy)

    def loss(weights, x):
        h, _ = jax.lax.scan(body, x, weights)
        return jnp.mean(h * h)
    return loss
