# A wrong workload, and `np` and `jnp` rebound in the student's kernel to look-alikes whose
# comparisons accept anything, hoping the grade cells use the student's `np`. The grading
# kernel binds the lesson's imports itself, from the instructor's notebook.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% replace workload
import types as _types

class _Anything:
    def __getattr__(self, name):
        return _Anything()

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __eq__(self, other):
        return True

np = _Anything()
jnp = _Anything()

@jax.jit
def workload(x, w):
    return jax.numpy.zeros((x.shape[0], w.shape[1]), jax.numpy.float32)
