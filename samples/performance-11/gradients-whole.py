# Returns the gradient whole on every device (psum of the gradient of the gathered layers,
# out_specs P()): what replicated data parallelism does, not FSDP; each device would hold every
# gradient. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        count = y.size * jax.lax.axis_size("fsdp")
        gathered = jax.lax.all_gather(stacked, "fsdp", axis=1, tiled=True)

        def loss_of(gathered):
            h, _ = jax.lax.scan(jax.checkpoint(lambda h, w: (jnp.tanh(h @ w), None)), x, gathered)
            return jnp.sum((h - y) ** 2) / count

        part, grads = jax.value_and_grad(loss_of)(gathered)
        return jax.lax.psum(part, "fsdp"), jax.lax.psum(grads, "fsdp")

    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), P()))
