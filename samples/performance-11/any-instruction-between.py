# Calls a pair overlapped whenever any instruction lies between its start and its done, bookkeeping
# (get-tuple-element, copies) and other collectives included. Loses the overlap cell only.
# expect: test_fsdp_step=4 test_overlap=0 test_memory=3
# tier: nightly
# %% solutions
# %% replace collective_overlap
def collective_overlap(hlo_text):
    import re

    found, pending = {}, {}
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?(\S+) = .*? ([\w-]+)\((.*)", line)
        if not m:
            continue
        name, op, args = m.groups()
        kind = re.sub(r"-(start|done)$", "", op)
        if kind in COLLECTIVE_KINDS and op.endswith("-done"):
            k, busy = pending.pop(re.search(r"(%[\w.\-]+)", args).group(1))
            found[k]["overlapped"] += busy
            continue
        for entry in pending.values():
            entry[1] = 1
        if kind in COLLECTIVE_KINDS:
            found.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
            if op.endswith("-start"):
                pending[name] = [kind, 0]
    return found
