# A correct notebook whose workload cell then displays three messages of about 450 MB each. The
# grader's sockets to the student's kernel refuse any message over four times the 1 MB a cell
# keeps (libzmq's MAXMSGSIZE), before reading it: the grader's memory does not grow with them
# (they once raised a grading worker to 1.9 GB before the output cap applied). libzmq closes
# the connection that carried such a message; the grader connects again, the cell's output
# says it was cut, and the grade report flags the refusal. The work is correct: full marks.
# reason: refused unread
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

from IPython.display import display

for _ in range(3):
    display({"text/plain": "x" * 450_000_000}, raw=True)
print("displayed")
