# Counts only the top level of the jaxpr: a nested jit or scan counts as one equation, so
# the operations inside it are missed. Its timings are right.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=0 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    equations = len(jax.make_jaxpr(fn)(*args).eqns)

    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)  # the first run kept apart
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
