# A correct notebook handed in with a folder perfcourse/ beside it, holding an evidence hook that
# installs nothing. Were the working folder on sys.path while the kernel's start-up lines import
# the course's package, the kernel would run this one: no audit hook, and no channel's agent
# either. The grader imports them before the folder is on sys.path (-P, then the folder added
# as IPython adds it; a kernel forked from a grading worker's fork server has them imported
# already), so the notebook is graded as the correct one it is, by a worker or by a plain
# `nbgrader autograde`.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% file text perfcourse/__init__.py
# %% file text perfcourse/kernel/__init__.py
CHANNEL_FD_ENV = "PERFCOURSE_CHANNEL_FD"
# %% file text perfcourse/kernel/evidence.py
def install():
    print("no audit hook")


def beat_each_cell():
    pass
