# Leaves the communication to jax.jit's partitioner: the right values and layouts, but the program
# writes no all-gather or reduce-scatter of its own. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    split = NamedSharding(mesh, STACKED)

    def step(stacked, x, y):
        def loss_fn(stacked):
            h, _ = jax.lax.scan(jax.checkpoint(lambda h, w: (jnp.tanh(h @ w), None)), x, stacked)
            return jnp.mean((h - y) ** 2)

        return jax.value_and_grad(loss_fn)(stacked)

    return jax.jit(step, out_shardings=(NamedSharding(mesh, P()), split))
