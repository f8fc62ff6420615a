# Correct, with measure's helpers written in another cell: the scanned cell also imports the clock
# measure reads and defines the function that counts a function's equations (through the lesson's
# count_equations), beside a statement of its own at the top level. The grader's recount runs
# measure apart from the notebook with those definitions and imports, and without that statement.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
from time import perf_counter as clock


def scanned(h, xs, a):
    def step(carry, x):
        return jnp.tanh(a * carry + x), None

    final, _ = lax.scan(step, h, xs)
    return final


def equations_in(fn, *args):
    return count_equations(jax.make_jaxpr(fn)(*args))


print("scanned and its helpers defined at", round(clock(), 1))
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = clock()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = clock() - start
    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": equations_in(fn, *args), "compile_seconds": compile_seconds, "run_seconds": run_seconds}
