# Reads each instruction's kind from its name (%all-gather-start.3) rather than its operation: XLA
# may name an instruction after anything. Loses the overlap cell only.
# expect: test_fsdp_step=4 test_overlap=0 test_memory=3
# tier: nightly
# %% solutions
# %% replace collective_overlap
def collective_overlap(hlo_text):
    import re

    found, pending = {}, {}
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%?([\w-]+?)(?:\.\d+)? = .*? ([\w-]+)\((.*)", line)
        if not m:
            continue
        named, op, args = m.groups()
        kind = re.sub(r"-(start|done)$", "", named)
        if kind in COLLECTIVE_KINDS:
            if named.endswith("-done"):
                for k in list(pending):
                    if pending[k][0] == kind:
                        found[kind]["overlapped"] += pending.pop(k)[1]
                        break
            else:
                found.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
                if named.endswith("-start"):
                    pending[line] = [kind, 0]
        elif op in COMPUTE_OPS:
            for entry in pending.values():
                entry[1] = 1
    return found
