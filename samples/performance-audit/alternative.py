# A different correct approach: jax.jit called on a plain function whose trace counter is a
# list of the shapes traced, the timings read with NumPy (np.median, np.quantile for the middle half), and a
# median computed by hand in a report built as one dict.
# expect: test_workload=2 test_first_call_evidence=3 test_trace_count=2 test_evidence=2 test_audit=1
# %% replace workload
_traced_shapes = []  # one entry per trace: the shapes JAX traced the workload at


def trace_count():
    return len(_traced_shapes)


def _tanh_of_product(a, b):
    _traced_shapes.append((a.shape, b.shape))  # runs only while JAX traces
    return jnp.tanh(jnp.matmul(a, b))


workload = jax.jit(_tanh_of_product)
# %% replace first_call_evidence
def first_call_evidence(first_call_seconds, steady_seconds):
    steady = np.asarray(steady_seconds, dtype=np.float64)
    one_time = first_call_seconds - np.median(steady)
    middle_half = np.quantile(steady, [0.25, 0.75])  # the same linear rule as np.percentile
    return {
        "steady_median_seconds": float(np.median(steady)),
        "steady_middle_half_seconds": middle_half.tolist(),
        "one_time_seconds": float(one_time),
        "one_time_fraction": float(one_time / first_call_seconds),
        "one_time_is_real": bool(first_call_seconds > middle_half[1]),
    }
# %% replace report
def build_report(measurements):
    steady = sorted(measurements["steady_seconds"])
    middle = len(steady) // 2
    median = steady[middle] if len(steady) % 2 else (steady[middle - 1] + steady[middle]) / 2
    return {
        "memory_measured": False,
        **measurements,
        "steady_median_seconds": median,
        "backend": jax.default_backend(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
