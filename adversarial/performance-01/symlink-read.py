# A correct notebook that leaves links to the instructor's source notebook, the gradebook and a
# classmate's submission beside itself, hoping feedback copies what they point at.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
import os

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for _name, _target in (("answers.ipynb", "../../../source/performance-01/performance-01.ipynb"),
                       ("grades.db", "../../../gradebook.db"),
                       ("classmate.ipynb", "../../sample-solution/performance-01/performance-01.ipynb")):
    try:
        os.symlink(_target, _name)
    except OSError as exc:
        print(_name, "refused:", type(exc).__name__)
