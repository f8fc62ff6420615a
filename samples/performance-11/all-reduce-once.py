# Counts an all-reduce as one transfer of the layer, as if it moved what a reduce-scatter moves (an
# all-reduce is a reduce-scatter and an all-gather). Loses the budget cell only.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=0
# tier: nightly
# %% solutions
# %% replace fsdp_budget
def fsdp_budget(layers, width, batch, devices, itemsize):
    layer = width * width * itemsize
    others = layer // devices * (devices - 1)  # a device receives every block of a layer but its own
    return {"replicated": layers * layer, "fsdp": layers * layer // devices, "gathered": layer,
            "moved": layers * 3 * others, "all_reduce": layers * others,
            "flops": layers * 8 * (batch // devices) * width * width}
