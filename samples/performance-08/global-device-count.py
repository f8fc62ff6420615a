# Counts the whole batch's elements with the process's device count (jax.device_count()) instead of
# the mesh's ("data" axis): right on a mesh of every device, n / k times too small a gradient on a
# mesh of k of them. The checks hand it both in every run. Loses the psum cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=0 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace grad_with_psum
def grad_with_psum(mesh):
    def local(w, x, y):
        count = y.size * jax.device_count()  # every device of the process, not the mesh's
        t = jnp.tanh(x @ w)
        dz = (2.0 / count) * (t - y) * (1.0 - t ** 2)
        return jax.lax.psum(x.T @ dz, "data")

    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data", None), P("data", None)), out_specs=P())
