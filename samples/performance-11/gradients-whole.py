# Returns every gradient whole on every device (psum, out_specs P()): what replicated data
# parallelism does, not FSDP; each device would hold every gradient. Loses the step's cell only.
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
        return jax.lax.psum(part, "fsdp"), [jax.lax.psum(g, "fsdp") for g in grads]

    return jax.shard_map(local, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=(P(), P()))
