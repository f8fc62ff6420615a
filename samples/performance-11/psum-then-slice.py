# Sums every gradient whole on every device (an all-reduce) and then keeps its own rows: the values
# are right, but each device receives n times what it keeps. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(weights, x, y):
        count = y.size * jax.lax.axis_size("fsdp")
        gathered = [jax.lax.all_gather(block, "fsdp", tiled=True) for block in weights]

        def loss_of(gathered):
            h = x
            for w in gathered:
                h = jnp.tanh(h @ w)
            return jnp.sum((h - y) ** 2) / count

        part, grads = jax.value_and_grad(loss_of)(gathered)
        me = jax.lax.axis_index("fsdp")
        kept = []
        for g, block in zip(grads, weights):
            total = jax.lax.psum(g, "fsdp")
            kept.append(jax.lax.dynamic_slice_in_dim(total, me * block.shape[0], block.shape[0], axis=0))
        return jax.lax.psum(part, "fsdp"), kept

    return jax.shard_map(local, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=(P(), ROWS))
