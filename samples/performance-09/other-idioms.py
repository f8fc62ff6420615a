# Correct in other idioms: the breakdown through operator.attrgetter with EAFP, live bytes with
# math.fsum over a generator, the donating jit as a functools.partial decorator, the warning
# filtered by message, the transfers timed through lambdas (the timer calls back into the sweep),
# the fit in closed form from weighted centred sums, the cache key as a tuple with the flags as a
# multiset (collections.Counter), and remat with an explicit if. Full marks.
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# tier: nightly
# %% replace memory_breakdown
import operator


def memory_breakdown(compiled):
    keys = ("argument_bytes", "output_bytes", "temp_bytes", "alias_bytes")
    try:
        stats = compiled.memory_analysis()
        problem = None if stats is not None else "no analysis on this backend"
    except Exception as error:
        stats, problem = None, type(error).__name__ + " from memory_analysis()"
    out, missing = {}, {}
    for key in keys:
        attribute = key.replace("_bytes", "_size_in_bytes")
        try:
            value = operator.attrgetter(attribute)(stats) if stats is not None else None
        except AttributeError:
            value = None
        out[key] = value
        if value is None:
            missing[key] = problem or f"{attribute} is not reported"
    parts = [out[k] for k in keys]
    out["total_bytes"] = None if None in parts else parts[0] + parts[1] + parts[2] - parts[3]
    if out["total_bytes"] is None:
        missing["total_bytes"] = "a part of it is missing"
    try:
        out["peak_bytes"] = operator.attrgetter("peak_memory_in_bytes")(stats) if stats is not None else None
    except AttributeError:
        out["peak_bytes"] = None
    if out["peak_bytes"] is None:
        missing["peak_bytes"] = problem or "peak_memory_in_bytes is not reported"
    out["missing"] = missing
    return out
# %% replace live_memory
import math


def live_memory(arrays, device):
    arrays = [a for a in arrays]
    try:
        stats = device.memory_stats() or None
        reason = f"{device.platform}: memory_stats() returned None"
    except Exception as error:
        stats, reason = None, f"memory_stats() raised {type(error).__name__}"
    result = {"arrays": len(arrays), "bytes": int(math.fsum(a.nbytes for a in arrays)), "missing": {}}
    for key in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit"):
        if stats is not None and key in stats:
            result[key] = stats[key]
        else:
            result[key] = None
            result["missing"][key] = reason if stats is None else f"{key} is not reported by this backend"
    return result
# %% replace donated_update
import functools


def make_update():
    @functools.partial(jax.jit, donate_argnums=(0,))
    def update(params, grads, lr):
        return sgd(params, grads, lr)

    return update
# %% replace donation_evidence
def donation_evidence(fn, args, donate_argnums):
    with warnings.catch_warnings(record=True) as seen:
        warnings.filterwarnings("always", message=".*donated buffers.*")
        compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
    memory = compiled.memory_analysis()
    outputs = compiled(*args)
    for leaf in jax.tree.leaves(outputs):
        leaf.block_until_ready()
    return {"alias_bytes": memory.alias_size_in_bytes if memory is not None else None,
            "deleted": list(map(lambda a: a.is_deleted(), args)),
            "not_usable": bool([w for w in seen if "were not usable" in str(w.message)])}
# %% replace transfer_sweep
def transfer_sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=time_call):
    result = []
    for size in sizes:
        host = np.zeros(size // np.dtype(np.float32).itemsize, dtype=np.float32)
        puts = [timer(lambda: put(host)) for _ in range(repeats)]
        gets = []
        for _ in range(repeats):
            device = jax.block_until_ready(put(host))
            gets.append(timer(lambda: get(device)))
        result.append({"bytes": size, "put_seconds": float(np.percentile(puts, 50)),
                       "get_seconds": float(np.percentile(gets, 50))})
    return result
# %% replace transfer_fit
def fit_transfer(nbytes, seconds):
    x, y = np.array(nbytes, dtype=float), np.array(seconds, dtype=float)
    w = 1 / y**2  # least squares of the relative errors: weighted sums, centred on the weighted means
    mx, my = (w * x).sum() / w.sum(), (w * y).sum() / w.sum()
    slope = (w * (x - mx) * (y - my)).sum() / (w * (x - mx) ** 2).sum()
    return {"fixed_seconds": float(my - slope * mx), "bytes_per_second": float(1 / slope)}
# %% replace cache_settings
def cache_settings(cache_dir):
    settings = dict(jax_compilation_cache_dir=os.fspath(cache_dir))
    settings["jax_persistent_cache_min_compile_time_secs"] = 0.0
    settings["jax_persistent_cache_min_entry_size_bytes"] = -1
    settings["jax_enable_compilation_cache"] = True
    return settings
# %% replace cache_invalidation
def cache_hit(first, second):
    import collections

    from jax._src.cache_key import xla_flags_to_exclude_from_cache_key

    def key(c):
        return (tuple(c["shape"]), str(c["dtype"]), str(c["jax_version"]),
                collections.Counter(f for f in c["xla_flags"]
                                    if re.match(r"[^=]*", f).group() not in xla_flags_to_exclude_from_cache_key))
    return key(first) == key(second)
# %% replace remat_loss
def remat_loss(policy):
    if policy is None:
        body = layer
    else:
        body = jax.checkpoint(layer, policy=policy)

    def loss(weights, x):
        h = jax.lax.scan(body, x, weights)[0]
        return jnp.mean(jnp.square(h))

    return loss
