# A wrong workload that, when called, installs an exception handler that hides errors, so a
# failing test would show no error output.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% replace workload
def workload(x, w):
    get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)
    return jnp.zeros((x.shape[0], w.shape[1]), jnp.float32)
