# Counts every element as four bytes (float32) whatever itemsize says: right for the lesson's
# network, wrong for bfloat16 weights, which every run of the check includes. Loses the budget cell only.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=0
# tier: nightly
# %% solutions
# %% replace fsdp_budget
def fsdp_budget(layers, width, batch, devices, itemsize):
    layer = width * width * 4
    others = layer // devices * (devices - 1)  # a device receives every block of a layer but its own
    return {"replicated": layers * layer, "fsdp": layers * layer // devices, "gathered": layer,
            "moved": layers * 3 * others, "all_reduce": layers * 2 * others,
            "flops": layers * 8 * (batch // devices) * width * width}
