# A different correct approach: lax.fori_loop indexing xs itself; the measurement times jit's
# stages one after another in one span (trace, then lower, then compile), reads a nanosecond
# clock imported by name, counts the jaxpr of the trace it timed, and runs through the jitted
# function (its cache already holds the program), synchronizing with the result's own method.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_measure_run_synchronized=2
# %% replace scanned
def scanned(h, xs, a):
    def body(t, state):
        return jnp.tanh(a * state + xs[t])

    return lax.fori_loop(0, xs.shape[0], body, h)
# %% replace measure
from time import perf_counter_ns


def measure(fn, *args, warm_calls=7):
    jitted = jax.jit(fn)
    begin = perf_counter_ns()
    traced = jitted.trace(*args)
    traced.lower().compile()
    compile_seconds = (perf_counter_ns() - begin) / 1e9
    equations = count_equations(traced.jaxpr)

    def one_run():
        begin = perf_counter_ns()
        jitted(*args).block_until_ready()
        return (perf_counter_ns() - begin) / 1e9

    return {"equations": equations, "compile_seconds": compile_seconds,
            "run_seconds": [one_run() for _ in range(warm_calls)]}
