# Another correct approach: jax.jit applied through functools.partial, a trace counter kept in a
# one-item list, a timer whose clock (time.monotonic_ns) is bound as a default argument and
# which waits for each result by converting it to NumPy, and a NumPy median in the report.
# expect: test_workload=2 test_timer_first_call=1 test_timer_synchronized=2 test_trace_count=2 test_evidence=2 test_audit=1
# tier: nightly
# %% replace workload
import functools

_traces = [0]  # _traces[0]: how many times JAX has traced workload's body


def trace_count():
    return _traces[0]


@functools.partial(jax.jit)
def workload(a, b):
    _traces[0] += 1  # plain Python: runs while JAX traces
    return jnp.tanh(jnp.dot(a, b))
# %% replace timer
def time_first_and_steady(fn, *args, steady_calls=7, clock=time.monotonic_ns):
    samples = []
    for _ in range(1 + steady_calls):
        begin = clock()
        np.asarray(fn(*args))  # a NumPy copy exists only once the result is ready
        samples.append((clock() - begin) * 1e-9)
    return samples[0], samples[1:]
# %% replace report
def build_report(measurements):
    report = {key: value for key, value in measurements.items()}
    report.update(
        steady_median_seconds=float(np.median(measurements["steady_seconds"])),
        backend=jax.default_backend(),
        jax=jax.__version__,
        jaxlib=jaxlib.__version__,
        numpy=np.__version__,
        python=platform.python_version(),
        memory_measured=False,
    )
    return report
