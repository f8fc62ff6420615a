# Leaves the communication to jax.jit's partitioner: the right values and layouts, but the program
# writes no all-gather or reduce-scatter of its own. Loses the step's cell only.
# expect: test_fsdp_step=0 test_overlap=3 test_memory=3
# tier: nightly
# %% solutions
# %% replace fsdp_step
def fsdp_step(mesh):
    rows = NamedSharding(mesh, ROWS)

    def step(weights, x, y):
        def loss_fn(weights):
            h = x
            for w in weights:
                h = jnp.tanh(h @ w)
            return jnp.mean((h - y) ** 2)

        return jax.value_and_grad(loss_fn)(weights)

    return jax.jit(step, out_shardings=(NamedSharding(mesh, P()), rows))
