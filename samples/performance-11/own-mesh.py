# Builds a mesh of its own (every device, in the default order) instead of using the one it is
# given: right on the lesson's mesh, wrong on any other. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    mine = jax.make_mesh((len(DEVICES),), ("fsdp",), axis_types=(AxisType.Explicit,), devices=DEVICES)

    def local(stacked, x, y):
        count = y.size * jax.lax.axis_size("fsdp")

        @jax.checkpoint
        def layer(h, block):
            return jnp.tanh(h @ jax.lax.all_gather(block, "fsdp", tiled=True)), None

        def loss_of(stacked):
            h, _ = jax.lax.scan(layer, x, stacked)
            return jnp.sum((h - y) ** 2) / count

        part, grads = jax.value_and_grad(loss_of)(stacked)
        return jax.lax.psum(part, "fsdp"), grads

    return jax.shard_map(local, mesh=mine, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
