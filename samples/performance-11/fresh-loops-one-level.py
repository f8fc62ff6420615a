# Follows the while loops ENTRY runs but not the loops inside them ("and theirs in turn"): a collective in a
# nested loop's body, which the schedule runs, is left uncounted.
# expect: test_fsdp_step=4 test_overlap=0 test_memory=3
# tier: nightly
# %% solutions
# %% replace collective_overlap
import re


def collective_overlap(hlo_text):
    computations = re.findall(r"^(ENTRY )?%?([\w.-]+) [^\n]*\{\n(.*?)\n\}", hlo_text, re.S | re.M)
    by_name = {name: body.splitlines() for _, name, body in computations}
    entry = next(name for is_entry, name, _ in computations if is_entry)
    scheduled = [entry]
    for line in by_name[entry]:  # the loops ENTRY runs (their own loops are not followed)
        if " while(" in line:
            scheduled += re.findall(r"(?:condition|body)=%?([\w.-]+)", line)
    result = {}
    for comp in scheduled:
        rows = []
        for line in by_name.get(comp, []):
            name, _, rest = line.strip().partition(" = ")
            op = re.search(r"(?:^\([^=]*?\)|^\S+)\s+([\w-]+)\(", rest)
            rows.append((name, op.group(1) if op else "", rest))
        for at, (name, op, _) in enumerate(rows):
            kind = op.removesuffix("-start")
            if kind not in COLLECTIVE_KINDS:
                continue
            entry_of = result.setdefault(kind, {"count": 0, "overlapped": 0})
            entry_of["count"] += 1
            if op.endswith("-start"):
                computed = False
                for _, later_op, later_rest in rows[at + 1:]:
                    if later_op == kind + "-done" and re.search(re.escape(name) + r"(?![\w.-])", later_rest):
                        break
                    computed = computed or later_op in COMPUTE_OPS
                entry_of["overlapped"] += computed
    return result
