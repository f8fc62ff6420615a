# Divides by the device's own batch instead of the whole batch's: the loss and every gradient are
# n times too large. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(weights, x, y):
        gathered = [jax.lax.all_gather(block, "fsdp", tiled=True) for block in weights]

        def loss_of(gathered):
            h = x
            for w in gathered:
                h = jnp.tanh(h @ w)
            return jnp.mean((h - y) ** 2)

        part, grads = jax.value_and_grad(loss_of)(gathered)
        grads = [jax.lax.psum_scatter(g, "fsdp", scatter_dimension=0, tiled=True) for g in grads]
        return jax.lax.psum(part, "fsdp"), grads

    return jax.shard_map(local, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=(P(), ROWS))
