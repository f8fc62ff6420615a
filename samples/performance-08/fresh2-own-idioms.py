# A student's own idioms: shardings built from a small dict of specs, collectives found by a regular expression
# for the operation (a kind, or its -start half, followed by its operands), the psum gradient with the whole
# batch's count from the mesh, a listener that appends to a list read by length, the verdicts from a table.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% replace data_parallel
def data_parallel(mesh):
    specs = {"w": P(), "x": P("data"), "y": P("data")}
    return {name: NamedSharding(mesh, spec) for name, spec in specs.items()}
# %% replace collectives
import re

_COLLECTIVE_OP = re.compile(r"\s(" + "|".join(map(re.escape, COLLECTIVE_KINDS)) + r")(?:-start)?\(")


def collectives(hlo_text):
    counts = dict.fromkeys(COLLECTIVE_KINDS, 0)
    for line in str(hlo_text).splitlines():
        head = line.split(", metadata=", 1)[0]  # an op_name may spell a collective out
        if "=" in head:
            for kind in _COLLECTIVE_OP.findall(head.split("=", 1)[1]):
                counts[kind] += 1
    return counts
# %% replace weights_split
def weights_split(mesh):
    return {"x": NamedSharding(mesh, P("data", None)), "w": NamedSharding(mesh, P(None, "model")),
            "y": NamedSharding(mesh, P("data", "model"))}
# %% replace grad_with_psum
def grad_with_psum(mesh):
    shards = mesh.shape["data"]

    def local(w, x, y):
        t = jnp.tanh(x @ w)
        dz = (2.0 / (y.size * shards)) * (t - y) * (1.0 - t * t)
        return jax.lax.psum(x.T @ dz, "data")

    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data", None), P("data", None)), out_specs=P())
# %% replace compiles_per_call
def compiles_per_call(fn, calls):
    events = []

    def on_duration(name, seconds, **kwargs):
        if name == COMPILE_EVENT:
            events.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    counts = []
    try:
        for args in calls:
            before = len(events)
            jax.block_until_ready(fn(*args))
            counts.append(len(events) - before)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return counts
# %% replace scaling_evidence
def scaling_evidence(warm_seconds):
    one = np.asarray(warm_seconds[1], dtype=float)
    one_low, one_high = np.percentile(one, [25, 75])
    one_median = float(np.median(one))
    read = {}
    for count, samples in warm_seconds.items():
        low, high = (float(v) for v in np.percentile(np.asarray(samples, dtype=float), [25, 75]))
        median = float(np.median(samples))
        verdict = "faster" if high < one_low else "slower" if low > one_high else "within the spread"
        read[count] = {"median_seconds": median, "middle_half": [low, high], "speedup": one_median / median,
                       "efficiency": one_median / median / count, "verdict": verdict}
    return read
