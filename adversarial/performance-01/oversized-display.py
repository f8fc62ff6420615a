# A correct notebook whose workload cell then displays three messages of 60 MB each. The
# grader's sockets to the student's kernel refuse any message part over four times the 1 MB a
# cell keeps (libzmq's MAXMSGSIZE: 4 MB), before reading it, so the grader's memory does not grow
# with what a kernel sends. Three 450 MB displays once raised a grading worker to 1.9 GB before
# the output cap applied (2.3 GB measured here without the bound; 120 MB with it). 60 MB is
# refused by the same check as 450 MB (anything over 4 MB is), at a seventh of the kernel's work
# (the 450 MB version peaked at 1.4 GB of the kernel's 2 GiB and took 14 s of a 20 s cell limit
# on a loaded machine). libzmq closes the connection that carried such a message; the grader
# sees it, connects again, the cell's output says it was cut and the grade report flags the
# refusal. The work is correct: full marks.
# reason: refused unread
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

from IPython.display import display

for _ in range(3):
    display({"text/plain": "x" * 60_000_000}, raw=True)
print("displayed")
