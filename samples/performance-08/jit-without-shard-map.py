# Returns jax.jit of jax.grad and leaves the sum to the partitioner: the gradient is right, but
# the program it hands to XLA writes no sum across devices (the task is to write it, with psum
# inside shard_map). Loses the psum cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=0 test_compile_key=2 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace grad_with_psum
def grad_with_psum(mesh):
    return jax.jit(jax.grad(lambda w, x, y: jnp.mean((jnp.tanh(x @ w) - y) ** 2)))
