# Differentiates with jax.grad inside shard_map and then adds a psum: autodiff has already summed
# the parts across devices (the transpose of the replicated w), so the psum counts each of them n
# times. Right on one device, n times too large on n. Loses the psum cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=0 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace grad_with_psum
def grad_with_psum(mesh):
    def local(w, x, y):
        count = y.size * mesh.shape["data"]
        part = jax.grad(lambda w: jnp.sum((jnp.tanh(x @ w) - y) ** 2) / count)(w)
        return jax.lax.psum(part, "data")

    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data", None), P("data", None)), out_specs=P())
