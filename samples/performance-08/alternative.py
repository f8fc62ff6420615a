# Other legal idioms: short specs (P("data") for the rows), the mesh's own axis names, a parser
# that splits each instruction instead of a regular expression, the whole batch's count summed by a
# psum of its own and the gradient's parts by another, a listener object that counts, time.monotonic
# with a NumPy conversion as the synchronization. Full marks.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_timer=2
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
# %% replace time_step
def time_step(fn, *args, repeats=5):
    import time

    samples = []
    for _ in range(repeats + 1):
        start = time.monotonic()
        jax.tree.map(np.asarray, fn(*args))  # a NumPy copy exists only once the result is ready
        samples.append(time.monotonic() - start)
    return samples[0], samples[1:]
