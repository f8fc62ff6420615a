# A correct notebook whose workload cell then silences the audit hook as a hostile student
# would: it finds the hook's pipe among /proc/self/fd (the only write-only pipe), puts /dev/null
# in its place with os.dup2, and swaps a function's __code__, which the hook can no longer
# record. The launcher sees the pipe end while the kernel still runs, the cells after it leave
# no heartbeat, and the scan of the submitted code names the descriptors it touched. Evidence,
# not a verdict: the work is correct and keeps full marks.
# reason: the evidence channel
# reason: the evidence channel closed while the kernel ran
# reason: the evidence channel went silent
# reason: code touches file descriptors
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: demo
# %% solutions
# %% replace workload
import os

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for _name in os.listdir("/proc/self/fd"):
    try:
        _target = os.readlink(f"/proc/self/fd/{_name}")
        with open(f"/proc/self/fdinfo/{_name}") as _info:
            _flags = int(_info.read().split("flags:")[1].split()[0], 8)
    except (OSError, IndexError, ValueError):
        continue
    if int(_name) > 2 and _target.startswith("pipe:") and _flags & 3 == os.O_WRONLY:
        os.dup2(os.open(os.devnull, os.O_WRONLY), int(_name))

def _honest():
    return 1

def _swapped():
    return 2

_honest.__code__ = _swapped.__code__  # recorded nowhere now
