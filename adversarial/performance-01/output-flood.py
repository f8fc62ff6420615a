# A correct notebook that prints about 50 MB: the grader keeps the first megabyte.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for _ in range(5000):
    print("x" * 10_000)
