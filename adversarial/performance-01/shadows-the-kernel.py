# A correct notebook handed in with a file named ipykernel_launcher.py beside it. `python -m
# ipykernel_launcher` runs the first such module on sys.path, which starts with the working
# folder (the submission's files): this one would start the real kernel without the course's
# start-up lines (the evidence hook, the channel's agent, the output caps) on its command line.
# The grader starts kernels with -P, so the file is never run and the notebook is graded as the
# correct one it is; the student's own modules still import, once the kernel is up.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% file text ipykernel_launcher.py
import sys

sys.argv = [arg for arg in sys.argv if "exec_lines" not in arg]
sys.path = [path for path in sys.path if path not in ("", ".") and not path.endswith("/work")]
del sys.modules["ipykernel_launcher"]
from ipykernel import kernelapp

kernelapp.launch_new_instance()
