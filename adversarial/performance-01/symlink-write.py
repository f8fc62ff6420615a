# A correct notebook that replaces its working copy of the notebook, and files the grader might
# write, by links to the gradebook, hoping the grader writes the graded notebook through them.
# The kernel works in a scratch folder of its own; the grader writes autograded/ itself.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
import os

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for _name in ("performance-01.ipynb", "performance-01.html", "timestamp.txt"):
    for _target in ("../../../gradebook.db", "../../gradebook.db", "../gradebook.db"):
        try:
            if os.path.lexists(_name):
                os.unlink(_name)
            os.symlink(_target, _name)
        except OSError as exc:
            print(_name, "refused:", type(exc).__name__)
