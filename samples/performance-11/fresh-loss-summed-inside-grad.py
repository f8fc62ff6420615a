# Correct, in other idioms: the loss summed across devices inside the differentiated function, its
# divisor the whole batch's element count summed across devices too (each device's count of its own
# rows' elements), and a jax.checkpoint with a policy that saves nothing: the step writes two scalar
# all-reduces, once each per step, after the scan, and autodiff adds none. Full marks.
# expect: test_fsdp_step=4 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    def local(stacked, x, y):
        elements = jax.lax.psum(jnp.sum(jnp.ones_like(y)), "fsdp")  # the whole batch's, from every device

        def layer(h, block):
            return jnp.tanh(h @ jax.lax.all_gather(block, "fsdp", tiled=True)), None

        rematerialized = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)

        def whole_batch_loss(blocks):
            h, _ = jax.lax.scan(rematerialized, x, blocks)
            return jax.lax.psum(jnp.sum((h - y) ** 2), "fsdp") / elements

        return jax.value_and_grad(whole_batch_loss)(stacked)

    return jax.shard_map(local, mesh=mesh, in_specs=(STACKED, ROWS, ROWS), out_specs=(P(), STACKED))
