# A correct notebook that tries to reach the network: the kernel has none.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3
# %% solutions
# %% replace workload
import socket

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for address in (("127.0.0.1", 22), ("10.0.0.1", 80), ("1.1.1.1", 53)):
    try:
        socket.create_connection(address, timeout=2).close()
        print("connected to", address)
    except OSError as exc:
        print(address, type(exc).__name__)
