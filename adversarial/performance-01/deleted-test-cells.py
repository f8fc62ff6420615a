# The untouched release with every test cell deleted: the grader puts them back.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% delete test_workload
# %% delete test_timer_first_call_apart
# %% delete test_timer_synchronized
# %% delete test_queued
