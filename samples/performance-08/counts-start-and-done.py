# Counts instructions, not mentions, but takes an asynchronous start and its done for two
# collectives. The lesson's CPU programs have no pairs, so only the hand-written example and the
# hidden checks see it. Loses the collectives cell only.
# expect: test_data_parallel=3 test_collectives=0 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace collectives
def collectives(hlo_text):
    import re

    instruction = re.compile(r"=\s.*?\s(" + "|".join(COLLECTIVE_KINDS) + r")(?:-start|-done)?\(")
    counts = {}
    for line in hlo_text.splitlines():
        found = instruction.search(line)
        if found:
            counts[found.group(1)] = counts.get(found.group(1), 0) + 1
    return counts
