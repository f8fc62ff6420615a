# Correct, in other idioms: value_and_grad of the local share of the loss with a decorated checkpointed
# body; the program's computations read into a dict and its schedule walked with a queue from ENTRY, each
# operation read after the result's shape, pairs matched by the done's operand; the budget from one layer's
# bytes.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# tier: nightly
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        whole_count = y.size * jax.lax.axis_size("fsdp")

        @jax.checkpoint
        def layer(h, block):
            weights = jax.lax.all_gather(block, "fsdp", tiled=True)
            return jnp.tanh(h @ weights), None

        def share_of_loss(blocks):
            h, _ = jax.lax.scan(layer, x, blocks)
            return jnp.sum(jnp.square(h - y)) / whole_count

        share, grads = jax.value_and_grad(share_of_loss)(stacked)
        return jax.lax.psum(share, "fsdp"), grads

    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
# %% replace collective_overlap
import re
from collections import deque


def _operation(line):
    # "%name = SHAPE op(...)": skip the shape (a tuple shape holds spaces and parentheses), read the op.
    _, _, rest = line.partition("=")
    rest = rest.lstrip()
    if rest.startswith("("):
        depth = 0
        for at, char in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                rest = rest[at + 1:]
                break
    else:
        rest = rest.split(" ", 1)[1] if " " in rest else ""
    found = re.match(r"\s*([\w.-]+)\(", rest)
    return found.group(1) if found else None


def collective_overlap(hlo_text):
    computations, entry, current = {}, None, None
    for line in hlo_text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith("{"):
            header = line.split("(")[0].split()
            current = header[-1].lstrip("%")
            computations[current] = []
            if header[0] == "ENTRY":
                entry = current
        elif line.strip() == "}":
            current = None
        elif current is not None and "=" in line:
            computations[current].append(line.strip())
    scheduled, queue = set(), deque([entry] if entry else [])
    while queue:
        name = queue.popleft()
        if name in scheduled or name not in computations:
            continue
        scheduled.add(name)
        for line in computations[name]:
            if _operation(line) == "while":
                queue.extend(re.findall(r"(?:condition|body)=%?([\w.-]+)", line))
    result = {}
    for name in scheduled:
        lines = computations[name]
        for at, line in enumerate(lines):
            op = _operation(line)
            for kind in COLLECTIVE_KINDS:
                if op not in (kind, kind + "-start"):
                    continue
                entry_of_kind = result.setdefault(kind, {"count": 0, "overlapped": 0})
                entry_of_kind["count"] += 1
                if op == kind + "-start":
                    start = line.split("=")[0].strip()
                    for later in lines[at + 1:]:
                        later_op = _operation(later)
                        if later_op == kind + "-done" and re.search(re.escape(start) + r"\b(?![.-])", later):
                            break
                        if later_op in COMPUTE_OPS:
                            entry_of_kind["overlapped"] += 1
                            break
    return result
# %% replace fsdp_budget
def fsdp_budget(layers, width, batch, devices, itemsize):
    layer_bytes = width * width * itemsize
    received = layer_bytes * (devices - 1) // devices  # one ring transfer of one layer
    rows = batch // devices
    return {"replicated": layers * layer_bytes, "fsdp": layers * layer_bytes // devices, "gathered": layer_bytes,
            "moved": 3 * layers * received, "all_reduce": 2 * layers * received,
            "flops": 8 * rows * width * width * layers}
