# Other correct spellings: jax.remat with prevent_cse=False and a nothing-saveable policy on a body
# that gathers with an explicit axis, value_and_grad over all three arguments (the batch's gradients
# dropped), a tokenizing reader of the schedule, the budget with NumPy integers.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        whole_batch = y.size * jax.lax.axis_size("fsdp")

        def body(h, block):
            layer = jax.lax.all_gather(block, "fsdp", axis=0, tiled=True)
            return jnp.tanh(jnp.dot(h, layer)), None

        body = jax.remat(body, prevent_cse=False, policy=jax.checkpoint_policies.nothing_saveable)

        def loss_of(stacked, x, y):
            out, _ = jax.lax.scan(body, x, stacked)
            return jnp.sum(jnp.square(out - y)) / whole_batch

        part, (grads, _, _) = jax.value_and_grad(loss_of, argnums=(0, 1, 2))(stacked, x, y)
        return jax.lax.psum(part, "fsdp"), grads

    return jax.shard_map(local, mesh=mesh, in_specs=(P(None, "fsdp", None), P("fsdp", None), P("fsdp", None)),
                         out_specs=(P(), P(None, "fsdp", None)))
# %% replace collective_overlap
def collective_overlap(hlo_text):
    blocks, name = {}, None
    for line in hlo_text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith("{"):
            words = line.split()
            name = words[1] if words[0] == "ENTRY" else words[0]
            name = "ENTRY" if words[0] == "ENTRY" else name.split("(")[0].lstrip("%")
            blocks[name] = []
        elif line.strip() == "}":
            name = None
        elif name:
            blocks[name].append(line)
    order, seen = ["ENTRY"], set()
    counts, overlapped = {}, {}
    while order:
        block = order.pop(0)
        if block in seen or block not in blocks:
            continue
        seen.add(block)
        started = {}
        for line in blocks[block]:
            for word in line.replace(",", " ").split():
                for key in ("condition=", "body="):
                    if word.startswith(key):
                        order.append(word[len(key):].lstrip("%"))
            left, eq, right = line.partition(" = ")
            if not eq:
                continue
            label = left.split()[-1]
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
                        started[label] = (base, 0)
            elif op in COMPUTE_OPS:
                started = {k: (kind, 1) for k, (kind, _) in started.items()}
    return {kind: {"count": c, "overlapped": overlapped.get(kind, 0)} for kind, c in counts.items()}
# %% replace fsdp_budget
def fsdp_budget(layers, width, batch, devices, itemsize):
    layer = np.int64(width) * width * itemsize
    block = layer // devices
    return {"replicated": int(layers * layer), "fsdp": int(layers * block), "gathered": int(layer),
            "moved": int(3 * layers * (layer - block)), "all_reduce": int(2 * layers * (layer - block)),
            "flops": int(8 * layers * (batch // devices) * np.int64(width) ** 2)}
