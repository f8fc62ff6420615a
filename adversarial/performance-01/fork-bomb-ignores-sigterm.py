# A correct notebook whose cell forks 300 children that ignore SIGTERM and SIGINT, sleep for an
# hour and are never reaped: they are still there when the notebook ends. At teardown the grader
# kills everything left in the kernel's cgroup and waits, bounded, for it to exit before removing
# the cgroup (removing one whose processes are still exiting fails with EBUSY, which once dropped
# the whole notebook): the notebook is scored in full. (Forking until the process bound refuses
# would leave the kernel no threads for its own work: that costs a notebook its later cells, as
# forks-and-memory shows, not its teardown.)
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

_forked = 0
try:
    for _ in range(300):
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                _time.sleep(3600)
            finally:
                os._exit(0)
        _forked += 1
except OSError as exc:
    print(f"fork refused after {_forked} children:", type(exc).__name__)
