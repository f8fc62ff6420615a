# Another correct approach: jax.jit applied through functools.partial, a trace counter kept in a
# one-item list, the timings read from a sorted copy (median and linear quartiles by hand), and a NumPy
# median in the report.
# expect: test_workload=2 test_first_call_evidence=3 test_trace_count=2 test_evidence=2 test_audit=1
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
# %% replace first_call_evidence
def first_call_evidence(first_call_seconds, steady_seconds):
    ordered = sorted(steady_seconds)

    def percentile(q):  # linear between sorted neighbours, as NumPy's default
        at = q * (len(ordered) - 1)
        below = int(at)
        return ordered[below] + (ordered[min(below + 1, len(ordered) - 1)] - ordered[below]) * (at - below)

    median = percentile(0.5)
    beyond = first_call_seconds - median
    return dict(steady_median_seconds=median, steady_middle_half_seconds=(percentile(0.25), percentile(0.75)),
                one_time_seconds=beyond, one_time_fraction=beyond / first_call_seconds,
                one_time_is_real=first_call_seconds - percentile(0.75) > 0)
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
