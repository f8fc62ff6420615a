# Leaves the gradient to jax.grad inside shard_map and writes no psum: the transpose of using the
# replicated w on every device is a sum over them, so JAX writes the all-reduce itself. The same
# gradient, summed across devices in the program before XLA's passes. Full marks.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace grad_with_psum
def grad_with_psum(mesh):
    def local(w, x, y):
        count = y.size * mesh.shape["data"]
        return jax.grad(lambda w: jnp.sum((jnp.tanh(x @ w) - y) ** 2) / count)(w)

    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data", None), P("data", None)), out_specs=P())
