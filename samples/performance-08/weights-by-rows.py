# Splits the weights by rows (inputs) over "model" instead of by columns (outputs), and the
# targets only by rows. Loses the weights-split cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=0 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace weights_split
def weights_split(mesh):
    return {"x": NamedSharding(mesh, P("data", None)), "w": NamedSharding(mesh, P("model", None)),
            "y": NamedSharding(mesh, P("data", None))}
