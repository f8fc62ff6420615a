# Data parallel with the batch replicated too: every device computes the whole batch, nothing is
# split, no gradient is summed. Loses the data-parallel cell only.
# expect: test_data_parallel=0 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace data_parallel
def data_parallel(mesh):
    whole = NamedSharding(mesh, P())
    return {"w": whole, "x": whole, "y": whole}
