# Other legal idioms: short specs (P("data") for the rows), the mesh's own axis names, a parser
# that splits each instruction instead of a regular expression, the whole batch's count summed by a
# psum of its own and the gradient's parts by another, a listener object that counts, quartiles from
# np.quantile on a sorted float64 copy and the verdict in one conditional expression. Full marks.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# %% solutions
# %% replace data_parallel
def data_parallel(mesh):
    (axis,) = mesh.axis_names
    return {"x": NamedSharding(mesh, P(axis)), "y": NamedSharding(mesh, P(axis)), "w": NamedSharding(mesh, P(None, None))}
# %% replace collectives
def collectives(hlo_text):
    counts = dict.fromkeys(COLLECTIVE_KINDS, 0)
    for line in hlo_text.splitlines():
        if " = " not in line:
            continue
        right = line.split(" = ", 1)[1]
        for kind in COLLECTIVE_KINDS:
            # the operation follows the result's shape: " kind(" or " kind-start("
            if f" {kind}(" in right.split(", metadata=")[0] or f" {kind}-start(" in right.split(", metadata=")[0]:
                counts[kind] += 1
                break
    return counts
# %% replace weights_split
def weights_split(mesh):
    data, model = mesh.axis_names
    return {"w": NamedSharding(mesh, P(None, model)), "x": NamedSharding(mesh, P(data)),
            "y": NamedSharding(mesh, P(data, model))}
# %% replace grad_with_psum
def grad_with_psum(mesh):
    (axis,) = mesh.axis_names

    def local(w, x, y):
        count = jax.lax.psum(y.size, axis)  # every device's elements, summed
        t = jnp.tanh(jnp.dot(x, w))
        residual = t - y
        return jax.lax.psum(jnp.dot(x.T, 2.0 * residual * (1.0 - t * t)) / count, axis)

    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P(axis), P(axis)), out_specs=P())
# %% replace compiles_per_call
class CompileCounter:
    def __init__(self):
        self.count = 0

    def __call__(self, event, duration_secs, **details):
        if event == COMPILE_EVENT:
            self.count += 1


def compiles_per_call(fn, calls):
    counter, counts = CompileCounter(), []
    jax.monitoring.register_event_duration_secs_listener(counter)
    try:
        for args in calls:
            start = counter.count
            np.asarray(fn(*args)[0])
            counts.append(counter.count - start)
    finally:
        jax.monitoring.unregister_event_duration_listener(counter)
    return counts
# %% replace scaling_evidence
def scaling_evidence(warm_seconds):
    def summary(samples):
        ordered = np.sort(np.asarray(samples, dtype=np.float64))
        return np.median(ordered), np.quantile(ordered, 0.25), np.quantile(ordered, 0.75)

    base, base_low, base_high = summary(warm_seconds[1])
    out = {}
    for devices in sorted(warm_seconds):
        median, low, high = summary(warm_seconds[devices])
        speedup = base / median
        out[devices] = {
            "verdict": "faster" if high < base_low else "slower" if low > base_high else "within the spread",
            "median_seconds": median, "middle_half": (low, high), "speedup": speedup, "efficiency": speedup / devices,
        }
    return out
