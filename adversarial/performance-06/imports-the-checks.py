# The trace-reading tasks are not written: the solution cells import the grader's own reference
# implementations from perfcourse.checks.profiling. The student's kernel sees only the code of
# the course package it runs (the channel's agent, the probes, the evidence hook), so the imports
# fail and both cells lose their points; the other two cells are the solution's.
# reason: code names the grading package
# expect: test_capture=3 test_read_trace=0 test_find_syncs=0 test_train=3 test_device_time=3 test_three_numbers=3
# %% solutions
# %% replace read_trace
from perfcourse.checks.profiling import device_time_by_op, host_gaps
# %% replace find_syncs
from perfcourse.checks.profiling import find_syncs
