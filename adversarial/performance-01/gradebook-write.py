# A correct notebook that tries to overwrite the gradebook: the course root is out of reach.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for path in ("../../../gradebook.db", "../../gradebook.db", "/work/main/gradebook.db"):
    try:
        with open(path, "w") as handle:
            handle.write("overwritten")
        print(path, "WRITTEN")
    except OSError as exc:
        print(path, "refused:", type(exc).__name__)
