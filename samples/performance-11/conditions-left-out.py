# Follows each loop's body=, not its condition=: a collective in a loop's condition runs every
# iteration too, and the task names both. Loses the overlap cell only.
# expect: test_fsdp_step=4 test_overlap=0 test_memory=3
# tier: nightly
# %% solutions
# %% replace collective_overlap
def collective_overlap(hlo_text):
    import re

    # Every computation's instruction lines, by name; ENTRY under "ENTRY".
    computations, current = {}, None
    for line in hlo_text.splitlines():
        if line[:1].strip() and line.rstrip().endswith("{"):
            head = line.split("(")[0].split()
            current = "ENTRY" if head[0] == "ENTRY" else head[0].lstrip("%")
            computations[current] = []
        elif line.startswith("}"):
            current = None
        elif current is not None:
            computations[current].append(line)

    # The schedule: ENTRY and the bodies of its loops, and of theirs (conditions left out).
    scheduled, todo = [], ["ENTRY"]
    while todo:
        name = todo.pop()
        if name in computations and name not in scheduled:
            scheduled.append(name)
            for line in computations[name]:
                todo += re.findall(r"\bbody=%?([\w.\-]+)", line)

    line_re = re.compile(r"^\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=\s*.*?\s([a-z][\w\-]*)\((.*)$")
    found = {}
    for name in scheduled:
        open_pairs = {}  # start's name -> (kind, computation seen since)
        for line in computations[name]:
            match = line_re.match(line)
            if not match:
                continue
            label, op, rest = match.groups()
            kind, _, phase = op.rpartition("-") if op.endswith(("-start", "-done")) else (op, "", "")
            if kind in COLLECTIVE_KINDS and phase != "done":
                found.setdefault(kind, {"count": 0, "overlapped": 0})["count"] += 1
                if phase == "start":
                    open_pairs[label] = (kind, False)
            elif kind in COLLECTIVE_KINDS:
                start = re.match(r"\s*[^%]*(%?[\w.\-]+)", rest).group(1)
                pair_kind, computed = open_pairs.pop(start, (kind, False))
                found[pair_kind]["overlapped"] += int(computed)
            elif op in COMPUTE_OPS:
                open_pairs = {start: (k, True) for start, (k, _) in open_pairs.items()}
    return found
    ### END SOLUTION