# A correct notebook that tries to reach services on the grading machine: the kernel has no
# network of its own (only a loopback interface nobody listens on), so every attempt fails.
# Only loopback addresses are tried: no test may send anything to another machine.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
import socket

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

for address in (("127.0.0.1", 22), ("::1", 22), ("localhost", 8888)):
    try:
        socket.create_connection(address, timeout=2).close()
        print("connected to", address)
    except OSError as exc:
        print(address, type(exc).__name__)
