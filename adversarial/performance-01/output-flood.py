# A correct notebook that prints about 50 MB: the student's kernel sends the first megabyte of
# the cell's printed text and drops the rest, and the report says the output was cut.
# reason: was cut at 1000000 bytes
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for _ in range(5000):
    print("x" * 10_000)
