# A different correct approach: jax.jit called on a plain function whose trace counter is a
# list of the shapes traced, a nanosecond clock read by name with the result's own
# block_until_ready(), and a median computed by hand in a report built as one dict.
# expect: test_workload=2 test_timer_first_call=1 test_timer_synchronized=2 test_trace_count=2 test_evidence=2 test_audit=1
# %% replace workload
_traced_shapes = []  # one entry per trace: the shapes JAX traced the workload at


def trace_count():
    return len(_traced_shapes)


def _tanh_of_product(a, b):
    _traced_shapes.append((a.shape, b.shape))  # runs only while JAX traces
    return jnp.tanh(jnp.matmul(a, b))


workload = jax.jit(_tanh_of_product)
# %% replace timer
from time import perf_counter_ns


def time_first_and_steady(fn, *args, steady_calls=7):
    def once():
        begin = perf_counter_ns()
        fn(*args).block_until_ready()
        return (perf_counter_ns() - begin) / 1e9

    first = once()
    return first, [once() for _ in range(steady_calls)]
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
