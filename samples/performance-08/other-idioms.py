# Still other idioms: axes given as tuples (P(("data",), None)), shardings built in a loop, a
# regular expression over the whole text, shard_map as a decorator with the axis size from
# jax.lax.axis_size, a nonlocal counter, the statistics module's median and inclusive quartiles
# (the same as NumPy's linear percentiles). Full marks.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace data_parallel
def data_parallel(mesh):
    specs = {"w": P(), "x": P(("data",), None), "y": P(("data",), None)}
    return {name: jax.sharding.NamedSharding(mesh, spec) for name, spec in specs.items()}
# %% replace collectives
def collectives(hlo_text):
    import collections
    import re

    kinds = "|".join(re.escape(k) for k in COLLECTIVE_KINDS)
    found = re.findall(r"^\s*(?:ROOT\s+)?\S+\s*=\s*.*?\s(" + kinds + r")(?:-start)?\(", hlo_text, flags=re.M)
    return dict(collections.Counter(found))
# %% replace weights_split
def weights_split(mesh):
    specs = {"w": P(None, ("model",)), "x": P(("data",), None), "y": P(("data",), ("model",))}
    return {name: jax.sharding.NamedSharding(mesh, spec) for name, spec in specs.items()}
# %% replace grad_with_psum
def grad_with_psum(mesh):
    import functools

    @functools.partial(jax.shard_map, mesh=mesh, in_specs=(P(None, None), P("data", None), P("data", None)),
                       out_specs=P(None, None))
    def gradient(w, x, y):
        t = jnp.tanh(x @ w)
        dz = 2.0 * (t - y) * (1.0 - t ** 2) / (y.size * jax.lax.axis_size("data"))
        return jax.lax.psum(jnp.einsum("bi,bo->io", x, dz), "data")

    return gradient
# %% replace compiles_per_call
def compiles_per_call(fn, calls):
    total = 0

    def listen(event, duration_secs, **details):
        nonlocal total
        total += event == COMPILE_EVENT

    out = []
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        for args in calls:
            before = total
            jax.tree.map(lambda leaf: leaf.block_until_ready(), fn(*args))
            out.append(total - before)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return out
# %% replace scaling_evidence
def scaling_evidence(warm_seconds):
    import statistics

    def middle_half(samples):
        low, _, high = statistics.quantiles(samples, n=4, method="inclusive")  # NumPy's linear percentiles
        return low, high

    one = warm_seconds[1]
    one_low, one_high = middle_half(one)
    result = {}
    for count, samples in warm_seconds.items():
        low, high = middle_half(samples)
        apart = {high < one_low: "faster", low > one_high: "slower"}
        ratio = statistics.median(one) / statistics.median(samples)
        result[count] = dict(median_seconds=statistics.median(samples), middle_half=[low, high], speedup=ratio,
                             efficiency=ratio / count, verdict=apart.get(True, "within the spread"))
    return result
