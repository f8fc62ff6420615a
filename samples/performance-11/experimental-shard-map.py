# The older spelling, jax.experimental.shard_map.shard_map (deprecated since jax 0.8, still there in
# 0.9.2 and 0.10.2), with the mesh and specs passed by position: full marks.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from jax.experimental.shard_map import shard_map

    def local(stacked, x, y):
        count = y.size * jax.lax.axis_size("fsdp")

        def layer(h, block):
            return jnp.tanh(h @ jax.lax.all_gather(block, "fsdp", tiled=True)), None

        def loss_of(stacked):
            h, _ = jax.lax.scan(jax.checkpoint(layer), x, stacked)
            return jnp.sum((h - y) ** 2) / count

        part, grads = jax.value_and_grad(loss_of)(stacked)
        return jax.lax.psum(part, "fsdp"), grads

    return shard_map(local, mesh, (STACKED, ROWS, ROWS), (P(), STACKED))
