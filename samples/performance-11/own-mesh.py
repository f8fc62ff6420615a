# Builds a mesh of its own (every device, in the default order) instead of using the one it is
# given: right on the lesson's mesh, wrong on any other. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    mine = jax.make_mesh((len(DEVICES),), ("fsdp",), axis_types=(AxisType.Explicit,), devices=DEVICES)

    def local(weights, x, y):
        count = y.size * jax.lax.axis_size("fsdp")
        gathered = [jax.lax.all_gather(block, "fsdp", tiled=True) for block in weights]

        def loss_of(gathered):
            h = x
            for w in gathered:
                h = jnp.tanh(h @ w)
            return jnp.sum((h - y) ** 2) / count

        part, grads = jax.value_and_grad(loss_of)(gathered)
        grads = [jax.lax.psum_scatter(g, "fsdp", scatter_dimension=0, tiled=True) for g in grads]
        return jax.lax.psum(part, "fsdp"), grads

    return jax.shard_map(local, mesh=mine, in_specs=(ROWS, ROWS, ROWS), out_specs=(P(), ROWS))
