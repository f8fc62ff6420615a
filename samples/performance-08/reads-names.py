# Counts collectives by their instruction names (%all-reduce.3, %all-gather-start.2) instead of by
# the operation after the `=`: right wherever XLA names an instruction after its kind, as the
# lesson's example does, wrong where it does not (%fusion.4 = ... all-reduce(...), an add named
# %all-reduce.5). Loses the collectives cell only.
# expect: test_data_parallel=3 test_collectives=0 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace collectives
def collectives(hlo_text):
    import re

    name = re.compile(r"^\s*(?:ROOT\s+)?%(" + "|".join(COLLECTIVE_KINDS) + r")(-start|-done)?[.\s=]")
    counts = {}
    for line in hlo_text.splitlines():
        found = name.match(line)
        if found and found.group(2) != "-done":
            counts[found.group(1)] = counts.get(found.group(1), 0) + 1
    return counts
