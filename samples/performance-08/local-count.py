# Divides each device's part by the number of elements of its own block, not of the whole batch:
# each part is the gradient of its block's mean, and their psum is n times the gradient of the
# whole batch's mean. Loses the psum cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=0 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace grad_with_psum
def grad_with_psum(mesh):
    def local(w, x, y):
        t = jnp.tanh(x @ w)
        dz = (2.0 / y.size) * (t - y) * (1.0 - t ** 2)
        return jax.lax.psum(x.T @ dz, "data")

    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data", None), P("data", None)), out_specs=P())
