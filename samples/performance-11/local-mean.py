# Divides by the device's own batch instead of the whole batch's: the loss and the gradient are
# n times too large. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        @jax.checkpoint
        def layer(h, block):
            return jnp.tanh(h @ jax.lax.all_gather(block, "fsdp", tiled=True)), None

        def loss_of(stacked):
            h, _ = jax.lax.scan(layer, x, stacked)
            return jnp.mean((h - y) ** 2)

        part, grads = jax.value_and_grad(loss_of)(stacked)
        return jax.lax.psum(part, "fsdp"), grads

    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
