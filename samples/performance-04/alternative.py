# A different correct approach: lax.fori_loop indexing xs itself; the measurement times jit's
# stages one after another in one span (trace, then lower, then compile), reads a nanosecond
# clock imported by name, counts the jaxpr of the trace it timed, and hands the course's timer the
# jitted function (its cache already holds the program); the sweep is read with
# statistics.linear_regression, each line evaluated at min() and max() of the lengths.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
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
    first_run, warm_runs = time_completed(jitted, *args, warm_calls=warm_calls)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": warm_runs}
# %% replace loop_growth
import statistics


def loop_growth(lengths, equations, compile_seconds):
    short, long = min(lengths), max(lengths)
    lines = {name: statistics.linear_regression(lengths, values)
             for name, values in (("equations", equations), ("seconds", compile_seconds))}
    at = {name: (fit.intercept + fit.slope * short, fit.intercept + fit.slope * long) for name, fit in lines.items()}
    grows = {name: end >= 2 * start for name, (start, end) in at.items()}
    if grows["equations"] and grows["seconds"]:
        verdict = "both grow"
    elif grows["equations"]:
        verdict = "only the equations grow"
    elif grows["seconds"]:
        verdict = "only compile time grows"
    else:
        verdict = "neither grows"
    return {"equations_per_step": lines["equations"].slope, "seconds_per_step": lines["seconds"].slope,
            "shortest_seconds": at["seconds"][0], "longest_seconds": at["seconds"][1], "verdict": verdict}
