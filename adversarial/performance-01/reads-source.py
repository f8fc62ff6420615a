# A correct notebook that tries to print the instructor's source notebook (hidden tests) into
# its own output, and so into its feedback.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
import glob

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for pattern in ("../../../source/*/*.ipynb", "/work/*/source/*/*.ipynb", "../../../samples/*/*"):
    for path in glob.glob(pattern):
        print(open(path).read())
print("found nothing to print")
