# Other correct spellings: jax.grad through the all-gathers (the transpose of an all-gather is a
# reduce-scatter, so autodiff writes it), pairs found by a scan of tokens, bytes with NumPy.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(weights, x, y):
        whole_batch = y.size * jax.lax.axis_size("fsdp")

        def loss_of(blocks):
            h = x
            for block in blocks:
                h = jnp.tanh(h @ jax.lax.all_gather(block, "fsdp", tiled=True))
            return jnp.sum(jnp.square(h - y)) / whole_batch

        part, grads = jax.value_and_grad(loss_of)(weights)
        return jax.lax.psum(part, "fsdp"), grads

    return jax.shard_map(local, mesh=mesh, in_specs=(P("fsdp", None),) * 3, out_specs=(P(), P("fsdp", None)))
# %% replace collective_overlap
def collective_overlap(hlo_text):
    counts, overlapped, started = {}, {}, {}
    for line in hlo_text.splitlines():
        left, eq, right = line.partition(" = ")
        if not eq:
            continue
        name = left.split()[-1]
        words = [w.split("(")[0] for w in right.split() if "(" in w and not w.startswith("(")]
        ops = [w for w in words if w and w.replace("-", "").isalpha() and w.islower()]
        if not ops:
            continue
        op = ops[0]
        base = op.removesuffix("-start").removesuffix("-done")
        if base in COLLECTIVE_KINDS:
            if op.endswith("-done"):
                rest = right.split(op + "(", 1)[1]
                operand = next(w for w in rest.replace("(", " ").replace(")", " ").replace(",", " ").split()
                               if w.startswith("%"))
                kind, busy = started.pop(operand)
                overlapped[kind] = overlapped.get(kind, 0) + busy
            else:
                counts[base] = counts.get(base, 0) + 1
                if op.endswith("-start"):
                    started[name] = (base, 0)
        elif op in COMPUTE_OPS:
            started = {k: (kind, 1) for k, (kind, _) in started.items()}
    return {kind: {"count": c, "overlapped": overlapped.get(kind, 0)} for kind, c in counts.items()}
# %% replace memory_per_device
def memory_per_device(layer_shapes, devices, itemsize):
    sizes = np.array([r * c for r, c in layer_shapes], dtype=np.int64)
    return {"replicated": int(sizes.sum()) * itemsize, "fsdp": int((sizes // devices).sum()) * itemsize,
            "gathered": int(sizes.max()) * itemsize}
