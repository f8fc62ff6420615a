# Divides by the batch of the process's every device (jax.device_count()) instead of the mesh's:
# right whenever the mesh uses every device, wrong on a smaller mesh. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        count = y.size * jax.device_count()

        @jax.checkpoint
        def layer(h, block):
            return jnp.tanh(h @ jax.lax.all_gather(block, "fsdp", tiled=True)), None

        def loss_of(stacked):
            h, _ = jax.lax.scan(layer, x, stacked)
            return jnp.sum((h - y) ** 2) / count

        part, grads = jax.value_and_grad(loss_of)(stacked)
        return jax.lax.psum(part, "fsdp"), grads

    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
