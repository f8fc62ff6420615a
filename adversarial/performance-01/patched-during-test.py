# Patches numpy's comparisons from inside the workload, that is while the test cell runs.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# %% replace workload
def workload(x, w):
    np.testing.assert_allclose = lambda *args, **kwargs: None
    return jnp.zeros((x.shape[0], w.shape[1]), jnp.float32)
