# Counts every layer whole as FSDP's gathered bytes, as if all layers were gathered at once (what a
# Python loop lets the CPU's schedule do), not the one layer a gather needs. Loses the budget cell only.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=0
# tier: nightly
# %% solutions
# %% replace fsdp_budget
def fsdp_budget(layers, width, batch, devices, itemsize):
    layer = width * width * itemsize
    others = layer // devices * (devices - 1)  # a device receives every block of a layer but its own
    return {"replicated": layers * layer, "fsdp": layers * layer // devices, "gathered": layers * layer,
            "moved": layers * 3 * others, "all_reduce": layers * 2 * others,
            "flops": layers * 8 * (batch // devices) * width * width}
