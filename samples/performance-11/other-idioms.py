# Backpropagation by hand with an explicit reduce-scatter per layer, untiled all-gathers reshaped,
# a regular expression per instruction, a loop for the bytes: full marks.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(weights, x, y):
        count = y.size * mesh.shape["fsdp"]
        hs, ws = [x], []
        for block in weights:
            stacked = jax.lax.all_gather(block, "fsdp")  # (devices, rows / devices, columns)
            w = stacked.reshape(-1, stacked.shape[-1])
            ws.append(w)
            hs.append(jnp.tanh(hs[-1] @ w))
        loss = jax.lax.psum(jnp.sum((hs[-1] - y) ** 2), "fsdp") / count
        dh = 2.0 * (hs[-1] - y) / count
        grads = [None] * len(ws)
        for layer in reversed(range(len(ws))):
            dz = dh * (1.0 - hs[layer + 1] ** 2)
            grads[layer] = jax.lax.psum_scatter(hs[layer].T @ dz, "fsdp", scatter_dimension=0, tiled=True)
            dh = dz @ ws[layer].T
        return loss, grads

    return jax.shard_map(local, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=(P(), ROWS))
# %% replace collective_overlap
def collective_overlap(hlo_text):
    import re

    result, pending = {}, {}
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?(\S+) = .*? ([\w-]+)\((.*)", line)
        if not m:
            continue
        name, op, args = m.groups()
        kind = re.sub(r"-(start|done)$", "", op)
        if kind in COLLECTIVE_KINDS:
            if op.endswith("-done"):
                start = re.search(r"(%[\w.\-]+)", args).group(1)
                k, busy = pending.pop(start)
                result[k]["overlapped"] += busy
            else:
                result.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
                if op.endswith("-start"):
                    pending[name] = [kind, 0]
        elif op in COMPUTE_OPS:
            for entry in pending.values():
                entry[1] = 1
    return result
# %% replace memory_per_device
def memory_per_device(layer_shapes, devices, itemsize):
    replicated = fsdp = gathered = 0
    for rows, columns in layer_shapes:
        replicated += rows * columns * itemsize
        fsdp += (rows // devices) * columns * itemsize
        gathered = max(gathered, rows * columns * itemsize)
    return {"replicated": replicated, "fsdp": fsdp, "gathered": gathered}
