# A correct notebook that writes files until the disk refuses. The kernel's scratch folder is a
# size-limited file system of its own, outside autograded/.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
import os

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

_written = 0
try:
    for _i in range(100_000):
        with open(f"fill-{_i}.bin", "wb") as _handle:
            _handle.write(os.urandom(1 << 20))
        _written += 1
except OSError as exc:
    print(f"stopped after {_written} MiB:", type(exc).__name__)
