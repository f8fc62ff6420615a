# The untouched release, with its test cells edited to pass: nbgrader restores the
# instructor's test cells from the gradebook before grading, so the edits earn nothing.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# %% replace test_workload
assert True
# %% replace test_timer_first_call_apart
pass
# %% replace test_timer_synchronized
pass
# %% replace test_queued
pass
