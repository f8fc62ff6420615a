# Rewrites the grade cells' metadata: 100 points, or no grading at all. The gradebook's
# record of each cell wins.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% metadata test_workload
{"points": 100}
# %% metadata test_timer_synchronized
{"grade": false, "points": 0}
