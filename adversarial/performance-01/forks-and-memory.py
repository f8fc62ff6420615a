# A correct notebook whose cell starts children that each try to hold 1 GiB (together far more
# than the kernel's bound), then forks until refused. The bounds hold for the kernel and all
# its processes together: the memory bound stops the hoarding children, the process bound
# stops the forks, and the kernel and its grade survive.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
import os
import signal
import time as _time

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

def _child(action):
    pid = os.fork()
    if pid == 0:
        try:
            action()
        finally:
            os._exit(0)
    return pid

def _hoard():
    block = bytearray(1 << 30)  # zero-filled: every page is touched
    _time.sleep(20)

_hoarders = [_child(_hoard) for _ in range(6)]
_time.sleep(3)
_killed = sum(os.waitpid(pid, os.WNOHANG)[0] != 0 for pid in _hoarders)
print(f"{_killed} of 6 memory hoarders were stopped")

_forked = []
try:
    for _ in range(2000):
        _forked.append(_child(lambda: _time.sleep(5)))
except OSError as exc:
    print(f"fork refused after {len(_forked)} children:", type(exc).__name__)
for _pid in _hoarders + _forked:
    try:
        os.kill(_pid, signal.SIGKILL)
        os.waitpid(_pid, 0)
    except OSError:
        pass
