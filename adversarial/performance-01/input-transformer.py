# Installs an IPython input transformer that turns every later cell into `pass`, so no test
# would ever run. Plain nbgrader gives this full marks. Here the student's kernel never serves
# the checks (its serve() line becomes `pass` too): each grade cell fails at once, not at the
# cell limit.
# reason: NotServing
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# %% replace workload
get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\n"])
