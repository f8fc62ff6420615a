# Pairs each -start with the next -done of its kind, in print order, where the text pairs them by the done's
# operand: with two transfers of one kind in flight, a start is closed early (or late) and its overlap misread.
# expect: test_fsdp_step=4 test_overlap=0 test_memory=3
# tier: nightly
# %% solutions
# %% replace collective_overlap
import re

OPERATION = re.compile(r"=\s*(?:\([^=]*?\)|\S+)\s+([\w-]+)\(")


def collective_overlap(hlo_text):
    bodies, entry, name = {}, None, None
    for line in hlo_text.splitlines():
        if line[:1] not in ("", " ") and line.rstrip().endswith("{"):
            words = line.split()
            name = (words[1] if words[0] == "ENTRY" else words[0]).lstrip("%")
            entry = name if words[0] == "ENTRY" else entry
            bodies[name] = []
        elif line.startswith("}"):
            name = None
        elif name and OPERATION.search(line):
            bodies[name].append(OPERATION.search(line).group(1))
            bodies[name + " lines"] = bodies.get(name + " lines", []) + [line]

    def walk(comp, seen):
        if comp in seen or comp not in bodies:
            return seen
        seen.append(comp)
        for line in bodies[comp + " lines"] if comp + " lines" in bodies else []:
            if re.search(r"\swhile\(", line):
                for callee in re.findall(r"(?:condition|body)=%?([\w.-]+)", line):
                    walk(callee, seen)
        return seen

    found = {}
    for comp in walk(entry, []):
        ops = bodies[comp]
        for at, op in enumerate(ops):
            kind = op[:-len("-start")] if op.endswith("-start") else op
            if kind not in COLLECTIVE_KINDS:
                continue
            counts = found.setdefault(kind, {"count": 0, "overlapped": 0})
            counts["count"] += 1
            if op.endswith("-start"):
                between = []
                for later in ops[at + 1:]:
                    if later == kind + "-done":  # the next done of this kind closes this start
                        break
                    between.append(later)
                counts["overlapped"] += any(b in COMPUTE_OPS for b in between)
    return found
