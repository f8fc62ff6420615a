# Correct, with the clock measure reads (timeit's default_timer) brought in by a star import in
# another cell. The grader's recount, which runs the measure cell apart from the notebook with the
# other cells' definitions and imports it needs, once left star imports out (the names they bind
# cannot be read from the cell): measure raised NameError apart and lost its point, unflagged. A name no statement binds
# now brings the star imports along.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
from timeit import *


def scanned(h, xs, a):
    def step(carry, x):
        return jnp.tanh(a * carry + x), None

    final, _ = lax.scan(step, h, xs)
    return final
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = default_timer()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = default_timer() - start
    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": count_equations(jax.make_jaxpr(fn)(*args)), "compile_seconds": compile_seconds,
            "run_seconds": run_seconds}
