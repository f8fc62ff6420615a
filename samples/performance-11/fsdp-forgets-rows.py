# Splits each layer's columns over the devices instead of its rows (rounding down where the columns
# do not divide): not the layout FSDP keeps. Loses the memory cell only.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=0
# tier: nightly
# %% solutions
# %% replace memory_per_device
def memory_per_device(layer_shapes, devices, itemsize):
    sizes = [rows * columns for rows, columns in layer_shapes]
    return {"replicated": sum(sizes) * itemsize,
            "fsdp": sum(rows * (columns // devices) for rows, columns in layer_shapes) * itemsize,
            "gathered": max(sizes) * itemsize}
