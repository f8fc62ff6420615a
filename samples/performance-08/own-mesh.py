# Builds its own mesh of jax.devices() instead of using the one it is given: right for the
# lesson's mesh, wrong on any other (another device order, fewer devices). Loses the
# data-parallel cell only (its hidden checks).
# expect: test_data_parallel=0 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace data_parallel
def data_parallel(mesh):
    mine = Mesh(np.array(jax.devices()), ("data",))
    return {"w": NamedSharding(mine, P()), "x": NamedSharding(mine, P("data", None)),
            "y": NamedSharding(mine, P("data", None))}
