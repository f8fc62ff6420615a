# A correct notebook whose cell emits 20,000 small outputs: displays and flushed prints, each a
# message of its own. The per-cell cap counts messages as well as bytes, and messages past it are
# dropped before they are parsed or stored, so the flood costs seconds, not the cell's time limit,
# and the grade does not depend on how busy the machine is.
# reason: was cut at 2000 messages
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
from IPython.display import display

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for _i in range(10_000):
    display(_i)
    print(_i, flush=True)
