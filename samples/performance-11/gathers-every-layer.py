# Counts every layer whole as FSDP's gathered bytes, as if all layers were gathered at once (what
# the CPU's schedule happens to do), not the one layer a gather needs. Loses the memory cell only.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=0
# tier: nightly
# %% solutions
# %% replace memory_per_device
def memory_per_device(layer_shapes, devices, itemsize):
    sizes = [rows * columns for rows, columns in layer_shapes]
    return {"replicated": sum(sizes) * itemsize, "fsdp": sum(sizes) // devices * itemsize,
            "gathered": sum(sizes) * itemsize}
