# Splits the inputs x by rows but leaves the targets y whole on every device, reading "the batch" as x alone
# (the text: x and y, the batch split by rows over "data").
# expect: test_data_parallel=0 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace data_parallel
def data_parallel(mesh):
    return {"x": NamedSharding(mesh, P("data", None)), "y": NamedSharding(mesh, P()), "w": NamedSharding(mesh, P())}
