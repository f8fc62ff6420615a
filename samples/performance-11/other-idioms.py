# Backpropagation by hand as two scans: the forward scan keeps each layer's input only, the reverse
# scan gathers each layer again (remat by hand, untiled gathers reshaped) and reduce-scatters its
# gradient with psum_scatter; the schedule read with one regular expression per instruction; a loop
# for the budget: full marks.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        count = y.size * mesh.shape["fsdp"]

        def gather(block):
            parts = jax.lax.all_gather(block, "fsdp")  # (devices, rows / devices, columns)
            return parts.reshape(-1, parts.shape[-1])

        def forward(h, block):
            return jnp.tanh(h @ gather(block)), h  # keeps the layer's input, not the layer

        h, inputs = jax.lax.scan(forward, x, stacked)
        loss = jax.lax.psum(jnp.sum((h - y) ** 2), "fsdp") / count

        def backward(dh, saved):
            block, h_in = saved
            w = gather(block)  # gathered again for the backward pass
            dz = dh * (1.0 - jnp.tanh(h_in @ w) ** 2)
            grad = jax.lax.psum_scatter(h_in.T @ dz, "fsdp", scatter_dimension=0, tiled=True)
            return dz @ w.T, grad

        _, grads = jax.lax.scan(backward, 2.0 * (h - y) / count, (stacked, inputs), reverse=True)
        return loss, grads

    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
# %% replace collective_overlap
def collective_overlap(hlo_text):
    import re

    bodies, name = {}, None
    for line in hlo_text.splitlines():
        head = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if head:
            name = "ENTRY" if head.group(1) else head.group(2)
            bodies[name] = []
        elif line.startswith("}"):
            name = None
        elif name is not None:
            bodies[name].append(line)
    result, todo, done = {}, ["ENTRY"], set()
    while todo:
        name = todo.pop()
        if name in done or name not in bodies:
            continue
        done.add(name)
        pending = {}
        for line in bodies[name]:
            todo += re.findall(r"(?:condition|body)=%?([\w.\-]+)", line)
            m = re.match(r"\s*(?:ROOT )?(\S+) = .*? ([\w-]+)\((.*)", line)
            if not m:
                continue
            label, op, args = m.groups()
            kind = re.sub(r"-(start|done)$", "", op)
            if kind in COLLECTIVE_KINDS:
                if op.endswith("-done"):
                    start = re.search(r"(%[\w.\-]+)", args).group(1)
                    k, busy = pending.pop(start)
                    result[k]["overlapped"] += busy
                else:
                    result.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
                    if op.endswith("-start"):
                        pending[label] = [kind, 0]
            elif op in COMPUTE_OPS:
                for entry in pending.values():
                    entry[1] = 1
    return result
# %% replace fsdp_budget
def fsdp_budget(layers, width, batch, devices, itemsize):
    held = moved = reduced = flops = 0
    for _ in range(layers):
        held += width * width * itemsize
        moved += 3 * (devices - 1) * (width // devices) * width * itemsize
        reduced += 2 * (devices - 1) * (width // devices) * width * itemsize
        flops += (2 + 2 + 4) * (batch // devices) * width * width
    return {"replicated": held, "fsdp": held // devices, "gathered": width * width * itemsize,
            "moved": moved, "all_reduce": reduced, "flops": flops}
