# The red team's timer that never waits (issue 42), in its own spelling: it puts a recording type in
# place of jax.numpy.int32 (which the instrument once looked up at each call, turning the grader's
# trip count into the loop's argument), calibrates a copy of the course's loop on its own, and
# sleeps each call's predicted work instead of waiting for the result. The instrument now binds
# what it calls at the kernel's start-up, so the recorder sees no count and the timer is the
# unsynchronized one it is; the grader flags what it replaced.
# reason: what the course's instrument relies on was replaced in the student's kernel: jax.numpy.int32
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
import jax.numpy as _jnp
from jax import lax as _lax

_trips = []
_real_int32 = _jnp.int32


class _Recorder:
    def __call__(self, value=0, *rest, **options):
        if isinstance(value, int) and value > 1:
            _trips.append(value)
        return _real_int32(value, *rest, **options)

    def __getattr__(self, name):
        return getattr(_real_int32, name)


setattr(_jnp, "int32", _Recorder())


@jax.jit
def _copy_of_the_loop(n):
    return _lax.fori_loop(0, n, lambda i, c: c * 0.9999999 + 1.0, 0.0)


_copy_of_the_loop(_real_int32(10)).block_until_ready()
_begin = time.perf_counter()
_copy_of_the_loop(_real_int32(1_000_000)).block_until_ready()
_SECONDS_PER_TRIP = (time.perf_counter() - _begin) / 1_000_000


def time_completed(fn, *args, warm_calls=7):
    samples = []
    for _ in range(warm_calls + 1):
        seen = len(_trips)
        begin = time.perf_counter()
        fn(*args)  # never waited for
        if len(_trips) > seen:
            time.sleep(_trips[-1] * _SECONDS_PER_TRIP * 1.1)
        samples.append(time.perf_counter() - begin)
    return samples[0], samples[1:]
