# Counts every line that mentions a collective: the -done half of a pair, names and metadata
# are counted as collectives. Loses the collectives cell only.
# expect: test_data_parallel=3 test_collectives=0 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace collectives
def collectives(hlo_text):
    counts = {}
    for line in hlo_text.splitlines():
        for kind in COLLECTIVE_KINDS:
            if kind in line:
                counts[kind] = counts.get(kind, 0) + 1
    return counts
