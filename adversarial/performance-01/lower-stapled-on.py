# A workload that runs NumPy for the calls the checks make: a plain Python function computing
# tanh(x @ w) on the host, with a jitted twin's `lower` and `trace` stapled on. The hidden test took a
# callable `lower` as the proof of jax.jit (the eighth red-team batch found the same proxy in the
# audit's check); it now asks for jax.jit's own type, so the workload's points are lost. The timers
# time the course's instruments, not this workload: they keep theirs.
# tier: nightly
# expect: test_workload=0 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
@jax.jit
def _twin(x, w):
    return jnp.tanh(x @ w)


def workload(x, w):
    return np.tanh(np.asarray(x, np.float32) @ np.asarray(w, np.float32))


workload.lower, workload.trace = _twin.lower, _twin.trace
