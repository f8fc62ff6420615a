# A correct loop (lax.fori_loop indexing xs itself) and a correct count, but the compile span
# holds XLA's compilation alone: fn is traced (for the count) and lowered before the first clock
# read. The lesson asks for the whole path, trace, lower and compile, in one span: loses the
# compile points only. (Runs go through the jitted function, synchronized by the result's method.)
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
def scanned(h, xs, a):
    def body(t, state):
        return jnp.tanh(a * state + xs[t])

    return lax.fori_loop(0, xs.shape[0], body, h)
# %% replace measure
from time import perf_counter_ns


def measure(fn, *args, warm_calls=7):
    jitted = jax.jit(fn)
    equations = count_equations(jitted.trace(*args).jaxpr)
    lowered = jitted.lower(*args)

    begin = perf_counter_ns()
    lowered.compile()
    compile_seconds = (perf_counter_ns() - begin) / 1e9

    def one_run():
        begin = perf_counter_ns()
        jitted(*args).block_until_ready()
        return (perf_counter_ns() - begin) / 1e9

    return {"equations": equations, "compile_seconds": compile_seconds,
            "run_seconds": [one_run() for _ in range(warm_calls + 1)][1:]}  # the first run left out
