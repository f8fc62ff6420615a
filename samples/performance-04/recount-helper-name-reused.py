# Correct, with measure's helper written in another cell under a name the measure cell also binds
# for itself, in another function (a local there). The grader's recount, which runs the measure cell
# apart from the notebook with the other cells' definitions it needs, once dropped a name read in
# one function and bound in another: measure raised NameError apart and lost its point, unflagged.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
def scanned(h, xs, a):
    return lax.scan(lambda carry, x: (jnp.tanh(a * carry + x), None), h, xs)[0]


def equations_in(fn, *args):
    """Every level's equations of fn's program at these arguments."""
    return count_equations(jax.make_jaxpr(fn)(*args))
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": equations_in(fn, *args), "compile_seconds": compile_seconds, "run_seconds": run_seconds}


def described(result):
    equations_in = result["equations"]
    return f"{equations_in} equations, compiled in {result['compile_seconds']:.3f} s"
