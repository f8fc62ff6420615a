# Weights split by columns, but the targets left whole along their columns: the step is still
# right (XLA moves the data), but y is not laid out as asked. Loses the weights-split cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=0 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace weights_split
def weights_split(mesh):
    rows = NamedSharding(mesh, P("data", None))
    return {"x": rows, "w": NamedSharding(mesh, P(None, "model")), "y": rows}
