# A correct notebook whose cell forks until refused and has children hold memory, together far
# more than one kernel's bound. The bounds hold for the kernel and all its processes together;
# the children are stopped, the kernel and the grade survive.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3
# %% solutions
# %% replace workload
import os
import signal
import time as _time

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

_children = []
try:
    for _ in range(2000):
        _pid = os.fork()
        if _pid == 0:
            _hoard = []
            try:
                for _ in range(6):
                    _hoard.append(bytearray(100 << 20))
            except MemoryError:
                pass
            _time.sleep(30)
            os._exit(0)
        _children.append(_pid)
except OSError as exc:
    print(f"fork refused after {len(_children)} children:", type(exc).__name__)
_time.sleep(2)
for _pid in _children:
    try:
        os.kill(_pid, signal.SIGKILL)
    except OSError:
        pass
for _pid in _children:
    try:
        os.waitpid(_pid, 0)
    except OSError:
        pass
